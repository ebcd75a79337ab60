#!/bin/sh
# Install lakectl for the current user: the console script, the man pages and the shell
# completions (`make install` runs this; PREFIX defaults to ~/.local).
#
#   console script  pipx install (when pipx is on PATH), else pip install --user
#   man pages       $PREFIX/share/man/man1/lakectl*.1
#   bash            $PREFIX/share/bash-completion/completions/lakectl
#   zsh             $PREFIX/share/zsh/site-functions/_lakectl
#   fish            $FISH_COMPLETIONS (default ~/.config/fish/completions)/lakectl.fish
#
# Variables: PREFIX, FISH_COMPLETIONS, PYTHON (default python3), and LAKECTL_INSTALL_CMD to
# replace the console-script step (e.g. "true" to install only the documents).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$HOME/.local}
PYTHON=${PYTHON:-python3}
FISH_COMPLETIONS=${FISH_COMPLETIONS:-${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions}
MAN_DIR=$PREFIX/share/man/man1
BASH_DIR=$PREFIX/share/bash-completion/completions
ZSH_DIR=$PREFIX/share/zsh/site-functions

if [ -n "${LAKECTL_INSTALL_CMD:-}" ]; then
    $LAKECTL_INSTALL_CMD "$ROOT"
elif command -v pipx >/dev/null 2>&1; then
    pipx install --force "$ROOT"
else
    "$PYTHON" -m pip install --user "$ROOT"
fi

mkdir -p "$MAN_DIR" "$BASH_DIR" "$ZSH_DIR" "$FISH_COMPLETIONS"
cp "$ROOT"/man/*.1 "$MAN_DIR"/
cp "$ROOT/completions/lakectl.bash" "$BASH_DIR/lakectl"
cp "$ROOT/completions/_lakectl" "$ZSH_DIR/_lakectl"
cp "$ROOT/completions/lakectl.fish" "$FISH_COMPLETIONS/lakectl.fish"

echo "installed: man pages in $MAN_DIR, completions in $BASH_DIR, $ZSH_DIR, $FISH_COMPLETIONS"
case ":${MANPATH:-}:" in *":$PREFIX/share/man:"*) ;; *) echo "man: add $PREFIX/share/man to MANPATH if 'man lakectl' does not find it" ;; esac
echo "zsh: add $ZSH_DIR to fpath (before compinit) if it is not there"
