#!/bin/sh
# Installs the man pages and shell completions (bash, zsh, fish) of every user-facing tool
# into a prefix, from the built tools themselves (each prints them with the hidden option
# `--generate=man|bash|zsh|fish`, pnet_stdlib::cli::generate):
#
#   cargo build --release && tools/install-docs.sh [PREFIX [BINDIR]]
#
# PREFIX (default: $HOME/.local) gets share/man/man1/TOOL.1,
# share/bash-completion/completions/TOOL, share/zsh/site-functions/_TOOL and
# share/fish/vendor_completions.d/TOOL.fish. BINDIR (default: target/release beside this
# script's folder) holds the built tools. tests/tests/docs.rs runs this script.
set -eu

# The tools, one line, read by tests/tests/docs.rs.
TOOLS="pnetc pnet2dot pnetv pnetput pnetget gspc-run gspc gspc-topology gspc-dds gspc-property gspc-worker gspc-leaf gspc-selftest pnet-lsp workload_exec"

PREFIX=${1:-$HOME/.local}
BINDIR=${2:-$(dirname "$0")/../target/release}

man=$PREFIX/share/man/man1
bash=$PREFIX/share/bash-completion/completions
zsh=$PREFIX/share/zsh/site-functions
fish=$PREFIX/share/fish/vendor_completions.d
mkdir -p "$man" "$bash" "$zsh" "$fish"

# gen TOOL KIND FILE: FILE is replaced only by a complete text.
gen() {
    "$BINDIR/$1" --generate="$2" >"$3.tmp" || {
        rm -f "$3.tmp"
        echo "install-docs.sh: $BINDIR/$1 --generate=$2 failed" >&2
        exit 1
    }
    mv "$3.tmp" "$3"
}

for tool in $TOOLS; do
    if [ ! -x "$BINDIR/$tool" ]; then
        echo "install-docs.sh: $BINDIR/$tool is not built (cargo build --release)" >&2
        exit 1
    fi
    gen "$tool" man "$man/$tool.1"
    gen "$tool" bash "$bash/$tool"
    gen "$tool" zsh "$zsh/_$tool"
    gen "$tool" fish "$fish/$tool.fish"
done
echo "installed the man pages of $TOOLS in $man, their completions in $bash, $zsh and $fish"
