"""Option values converted without Pydantic.

Typer 0.29 converts every parameter value through a Pydantic ``TypeAdapter`` built when the
command line is parsed: importing Pydantic and building the adapters is about a third of a
small command's whole run. lakectl's options are plain ``str``/``int``/``float``/``bool`` (or
optional, or lists of them), whose conversion is one call; ``install()`` gives those a direct
converter and leaves every other annotation (paths, choices, ranges, files) to Typer. A value
of an unexpected type falls back to Typer's own conversion, so behaviour only gets faster.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any

import typer.core
from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam, TypeDescriptor

_SCALARS = (str, int, float, bool)
_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean"}
_original_build = typer.core.build_runtime_param


def _unoptional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else None
    return annotation


def _plain_type(descriptor: TypeDescriptor) -> tuple[type, bool] | None:
    """(scalar type, is a list) for the annotations converted here; None for the others."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.min is not None or info.max is not None:
        return None
    if getattr(info, "click_type", None) is not None or getattr(info, "parser", None) is not None:
        return None
    inner = _unoptional(descriptor.annotation)
    is_list = typing.get_origin(inner) is list
    if is_list:
        args = typing.get_args(inner)
        inner = args[0] if len(args) == 1 else None
    return (inner, is_list) if inner in _SCALARS else None


@dataclass(frozen=True)
class PlainRuntimeParam(RuntimeParam):
    """str/int/float/bool (optional, or a list of them) from the command line's text."""

    scalar: type
    is_list: bool
    descriptor: TypeDescriptor

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, self.scalar) and not (self.scalar is int and isinstance(value, bool)):
            return value
        if isinstance(value, str) and self.scalar in (int, float):
            try:
                return self.scalar(value.strip())
            except ValueError:
                raise BadParameter(f"{value!r} is not a valid {_NAMES[self.scalar]}.", ctx=ctx, param=param) \
                    from None
        return _original_build(self.descriptor).coerce(value, param=param, ctx=ctx)  # anything unusual

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.is_list:
            return [self._one(v, param, ctx) for v in value]
        return self._one(value, param, ctx)


def build_runtime_param(descriptor: TypeDescriptor) -> RuntimeParam:
    plain = _plain_type(descriptor)
    if plain is None:
        return _original_build(descriptor)
    return PlainRuntimeParam(descriptor.parameter_info, descriptor.annotation, plain[0], plain[1], descriptor)


def install() -> None:
    typer.core.build_runtime_param = build_runtime_param
