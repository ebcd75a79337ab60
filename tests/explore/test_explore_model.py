"""The stall explorer's model (explore_kit.py) on hand-made outcomes: it allows what some order
of the commands that exited 0 gives, and nothing else. Fast: no table is touched."""

from __future__ import annotations

import explore_kit as kit


def _outcomes(a: str, a_code: int, b: str, b_code: int, w_code: int) -> list[dict]:
    return kit.model_outcomes(kit.COMMANDS[a].steps("a"), a_code, kit.COMMANDS[b].steps("b"), b_code, w_code)[0]


def _main_rows(outcomes: list[dict]) -> set[tuple]:
    return {tuple(tuple(r) for r in o[kit.TABLE]["rows"]) for o in outcomes if kit.TABLE in o}


def _rows(rows: kit.Rows) -> tuple:
    return tuple(sorted(rows.items()))


def test_a_write_that_exited_0_is_there_whatever_its_place_and_one_that_failed_is_not() -> None:
    template = dict(kit.HISTORY[-1])
    ok = _main_rows(_outcomes("write", 0, "compact", 0, 0))
    assert ok == {_rows({**template, **kit.write_rows("a"), **kit.W_ROWS})}  # their keys differ: any order
    a_then_b = _main_rows(_outcomes("write", 0, "write", 0, 0))
    both = {**template, **kit.write_rows("a"), **kit.write_rows("b"), **kit.W_ROWS}
    # Key 1 is written by both: whichever came last holds it.
    assert a_then_b == {_rows({**both, (1, kit.OLD): "write-b"}), _rows({**both, (1, kit.OLD): "write-a"})}
    failed = _main_rows(_outcomes("write", 4, "compact", 0, 0))
    assert failed == {_rows({**template, **kit.W_ROWS})}


def test_a_rollback_removes_what_came_before_it_only() -> None:
    rows = _main_rows(_outcomes("rollback", 0, "write", 0, 0))
    at2 = dict(kit.ROWS_AT[2])
    b, w = kit.write_rows("b"), kit.W_ROWS
    assert rows == {_rows({**at2, **b, **w}),  # A B W
                    _rows({**at2, **w}),  # B A W
                    _rows(at2)}  # B W A
    # Exactly these: a state holding W's rows but not B's (B exited 0, before W) is none of them.
    assert _rows({**kit.HISTORY[-1], **w}) not in rows


def test_a_streaming_write_that_failed_may_have_committed_a_prefix_of_its_batches() -> None:
    template = dict(kit.HISTORY[-1])
    first, second = kit.stream_batches("a")
    rows = _main_rows(_outcomes("stream", 4, "expire", 0, 4))
    assert rows == {_rows(template), _rows({**template, **first}), _rows({**template, **first, **second})}


def test_tags_follow_their_commands() -> None:
    outcomes, orders = kit.model_outcomes(kit.COMMANDS["tag-create"].steps("a"), 0,
                                          kit.COMMANDS["expire-aggressive"].steps("b"), 0, 0)
    # After an aggressive expire snapshot 4 is gone: only "tag first, then expire" can succeed,
    # and the tag scans to snapshot 4's rows.
    assert orders == ["A B W"]
    assert outcomes and all(o[kit.TABLE]["tags"]["ta"] == sorted(kit.ROWS_AT[4].items()) for o in outcomes)
    two_renames = _outcomes("tag-rename", 0, "tag-rename", 0, 0)
    assert two_renames == []  # both renames of "keep" cannot have exited 0


def test_a_rename_moves_the_table_and_a_write_after_it_cannot_succeed() -> None:
    outcomes = _outcomes("rename", 0, "compact", 0, 3)
    assert outcomes and all(set(o) == {"db.ua"} for o in outcomes)
    assert _outcomes("rename", 0, "drop", 0, 3) == []  # the renamed table cannot have been dropped too
