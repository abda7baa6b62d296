#!/usr/bin/env bash
# Checks the documented Neovim configuration (editors/pnet.lua) against the built server:
# opens a net with an error in nvim --headless and waits for pnet-lsp's diagnostics; then,
# in a second net, presses the documented `K` (hover) and `gd` (definition) on a connection's
# place and checks the hover's text and the jump.
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
cat > "$tmp/keys.xpnet" <<'XML'
<defun name="m">
  <net>
    <place name="counter" type="long"/>
    <transition name="t">
      <defun>
        <in name="a" type="long"/>
        <expression></expression>
      </defun>
      <connect-in port="a" place="counter"/>
    </transition>
  </net>
</defun>
XML
cat > "$tmp/check.lua" <<'LUA'

vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local ds = vim.diagnostic.get(0)
local out = io.open(vim.env.OUT, "w")
for _, d in ipairs(ds) do
  out:write(string.format("%d:%d %s %s\n", d.lnum, d.col, d.source or "", d.message:gsub("\n", " | ")))
end

-- the key mappings, in a second net: K and gd on the place of the connection
vim.cmd("edit " .. vim.env.KEYS)
local buf = vim.api.nvim_get_current_buf()
-- until the server attached to it has answered `initialize`
vim.wait(20000, function()
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
    if c.server_capabilities and c.server_capabilities.hoverProvider then
      return true
    end
  end
  return false
end, 50)
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
for i, l in ipairs(lines) do
  local c = l:find('place="counter"', 1, true)
  if c and l:find("connect") then
    vim.api.nvim_win_set_cursor(0, { i, c + 8 })
  end
end
local function floats()
  local ws = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then
      table.insert(ws, w)
    end
  end
  return ws
end
vim.api.nvim_feedkeys("K", "x", false)
local hover = "none"
vim.wait(20000, function()
  local w = floats()[1]
  if w then
    hover = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), " ")
    return true
  end
  return false
end, 50)
out:write("K: " .. hover .. "\n")
for _, w in ipairs(floats()) do
  vim.api.nvim_win_close(w, true)
end
local before = vim.api.nvim_win_get_cursor(0)[1]
vim.api.nvim_feedkeys("gd", "x", false)
vim.wait(20000, function() return vim.api.nvim_win_get_cursor(0)[1] ~= before end, 50)
local pos = vim.api.nvim_win_get_cursor(0)
out:write(string.format("gd: %d:%d\n", pos[1], pos[2]))
out:close()
vim.cmd("qa!")
LUA
PNET_LSP="$server" OUT="$tmp/out.txt" KEYS="$tmp/keys.xpnet" timeout 60 nvim --headless --clean \
  -c "source $here/pnet.lua" -c "edit $tmp/net.xpnet" -c "source $tmp/check.lua"
cat "$tmp/out.txt"
grep -q "^3:.*pnet.*type" "$tmp/out.txt" || { echo "nvim-check: no diagnostic"; exit 1; }
# K: the hover of the place; gd: the cursor on the place's declaration (line 3, its name)
grep -q "^K: .*place counter: long" "$tmp/out.txt" || { echo "nvim-check: K did not hover"; exit 1; }
grep -q "^gd: 3:17$" "$tmp/out.txt" || { echo "nvim-check: gd did not jump"; exit 1; }
echo "nvim-check: ok"
