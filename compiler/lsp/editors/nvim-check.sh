#!/usr/bin/env bash
# Checks the documented Neovim configuration (editors/pnet.lua) against the built server:
# opens a net with an error in nvim --headless and waits for pnet-lsp's diagnostics.
# usage: editors/nvim-check.sh [path/to/pnet-lsp]   (exits 0 on success; 77 if no nvim)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=${1:-pnet-lsp}
command -v nvim >/dev/null || { echo "nvim not installed; skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/net.xpnet" <<'XML'
<defun name="n">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <expression>${b} := ${a} + 1</expression>
</defun>
XML
cat > "$tmp/check.lua" <<'LUA'

vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local ds = vim.diagnostic.get(0)
local out = io.open(vim.env.OUT, "w")
for _, d in ipairs(ds) do
  out:write(string.format("%d:%d %s %s\n", d.lnum, d.col, d.source or "", d.message:gsub("\n", " | ")))
end
out:close()
vim.cmd("qa!")
LUA
PNET_LSP="$server" OUT="$tmp/out.txt" timeout 60 nvim --headless --clean \
  -c "source $here/pnet.lua" -c "edit $tmp/net.xpnet" -c "source $tmp/check.lua"
cat "$tmp/out.txt"
grep -q "^3:.*pnet.*type" "$tmp/out.txt"
echo "nvim-check: ok"
