#!/usr/bin/env bash
# Checks the documented Neovim configuration (editors/pnet.lua) against the built server:
# opens a net with an error in nvim --headless and waits for pnet-lsp's diagnostics; then,
# in a second net, presses the documented mappings and checks what they did: `K` (hover) and
# `gd` (definition) on a connection's place, `<leader>rn` (rename, the prompt answered),
# `]d` and `<leader>ca` (a quick fix, the first one chosen) on a misspelled place; asks
# for signature help, workspace symbols, inlay hints and semantic tokens; then `<leader>f`
# (formatting an expression), `gd` on a `${port}` inside it, and the hints of a local.
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

-- the prompts of rename and code action, answered as a user would
vim.ui.input = function(_, on_confirm) on_confirm("total") end
vim.ui.select = function(items, _, on_choice) on_choice(items[1], 1) end
local function find(s)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:find(s, 1, true) then return i end
  end
end
local function line(i) return vim.api.nvim_buf_get_lines(buf, i - 1, i, false)[1] end
local function float_text()
  local text = "none"
  vim.wait(20000, function()
    local w = floats()[1]
    if w then
      text = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), " ")
      return true
    end
    return false
  end, 50)
  for _, w in ipairs(floats()) do vim.api.nvim_win_close(w, true) end
  return text
end
-- <leader>rn on the declaration (where gd left the cursor): `counter` becomes `total`
vim.api.nvim_feedkeys("\\rn", "x", false)
vim.wait(20000, function() return find('place="total"') ~= nil end, 50)
out:write("rn: " .. line(3):gsub("^%s+", "") .. " " .. (line(find('place="total"') or 1)):gsub("^%s+", "") .. "\n")
-- a misspelled place: ]d jumps to it, <leader>ca's first fix (the nearest name) repairs it
local row = find('place="total"')
vim.api.nvim_buf_set_lines(buf, row - 1, row, false, { (line(row):gsub('place="total"', 'place="totl"')) })
vim.wait(20000, function()
  return #vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR }) > 0
end, 50)
vim.api.nvim_win_set_cursor(0, { 1, 0 })
vim.api.nvim_feedkeys("]d", "x", false)
out:write(string.format("]d: %d\n", vim.api.nvim_win_get_cursor(0)[1]))
vim.api.nvim_feedkeys("\\ca", "x", false)
vim.wait(20000, function() return line(row):find('place="total"', 1, true) ~= nil end, 50)
out:write("ca: " .. line(row):gsub("^%s+", "") .. "\n")
-- signature help in a call of a built-in
local er = find("<expression>")
vim.api.nvim_buf_set_lines(buf, er - 1, er, false, { "        <expression>max (${a}, </expression>" })
vim.api.nvim_win_set_cursor(0, { er, #"        <expression>max (${a}, " })
for _, w in ipairs(floats()) do vim.api.nvim_win_close(w, true) end -- ]d's float
vim.lsp.buf.signature_help()
out:write("sig: " .. float_text() .. "\n")
-- inlay hints and semantic tokens (Neovim 0.7 shows neither: asked through its client)
local doc = vim.lsp.util.make_text_document_params()
local function results(method, params)
  local list = {}
  for _, res in pairs(vim.lsp.buf_request_sync(buf, method, params, 20000) or {}) do
    if res.result then table.insert(list, res.result) end
  end
  return list[1]
end
local hints = results("textDocument/inlayHint", { textDocument = doc,
  range = { start = { line = 0, character = 0 }, ["end"] = { line = 99, character = 0 } } }) or {}
out:write("hints: " .. (hints[1] and hints[1].label or "none") .. "\n")
local tokens = results("textDocument/semanticTokens/full", { textDocument = doc }) or {}
out:write("tokens: " .. #(tokens.data or {}) / 5 .. "\n")
-- workspace symbols, into the quickfix list
vim.lsp.buf.workspace_symbol("total")
vim.wait(20000, function() return #vim.fn.getqflist() > 0 end, 50)
local qf = vim.fn.getqflist()[1]
out:write(string.format("ws: %d %s\n", qf and qf.lnum or 0, qf and qf.text or "none"))
-- <leader>f formats the expression (vim.lsp.buf.format, or formatting_sync in Neovim 0.7)
vim.cmd("cclose") -- workspace_symbol's quickfix window
er = find("<expression>")
vim.api.nvim_buf_set_lines(buf, er - 1, er, false, { "        <expression>${n}:=${a}*2L</expression>" })
vim.api.nvim_win_set_cursor(0, { er, 0 })
vim.api.nvim_feedkeys("\\f", "x", false)
vim.wait(20000, function() return line(er):find(":= ", 1, true) ~= nil end, 50)
out:write("fmt: " .. line(er):gsub("^%s+", "") .. "\n")
-- gd on a port inside the expression: its declaration
vim.api.nvim_win_set_cursor(0, { er, line(er):find("${a}", 1, true) + 1 })
vim.api.nvim_feedkeys("gd", "x", false)
vim.wait(20000, function() return vim.api.nvim_win_get_cursor(0)[1] ~= er end, 50)
pos = vim.api.nvim_win_get_cursor(0)
out:write(string.format("gd-expr: %d:%d\n", pos[1], pos[2]))
-- inlay hints: the local's type after its assignment's target, the port's after `${a}`
hints = results("textDocument/inlayHint", { textDocument = doc,
  range = { start = { line = 0, character = 0 }, ["end"] = { line = 99, character = 0 } } }) or {}
local shown = {}
for _, h in ipairs(hints) do
  table.insert(shown, string.format("%d:%d%s", h.position.line + 1, h.position.character, h.label))
end
out:write("local-hints: " .. table.concat(shown, " ") .. "\n")
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
# <leader>rn renamed the place and its connection; ]d went to the misspelled place (line 9),
# <leader>ca fixed it; signature help and workspace symbols answered
grep -q '^rn: <place name="total" type="long"/> <connect-in port="a" place="total"/>$' "$tmp/out.txt" \
  || { echo "nvim-check: <leader>rn did not rename"; exit 1; }
grep -q "^\]d: 9$" "$tmp/out.txt" || { echo "nvim-check: ]d did not jump"; exit 1; }
grep -q '^ca: <connect-in port="a" place="total"/>$' "$tmp/out.txt" \
  || { echo "nvim-check: <leader>ca did not fix"; exit 1; }
grep -q "^sig: max (T, T) -> T" "$tmp/out.txt" || { echo "nvim-check: no signature help"; exit 1; }
grep -q "^ws: 3 .*total" "$tmp/out.txt" || { echo "nvim-check: no workspace symbol"; exit 1; }
# `max (${a}, `: the hint after `${a}`, two tokens (max, ${a})
grep -q "^hints: : long$" "$tmp/out.txt" || { echo "nvim-check: no inlay hint"; exit 1; }
grep -q "^tokens: 2$" "$tmp/out.txt" || { echo "nvim-check: no semantic tokens"; exit 1; }
# <leader>f formatted the expression; gd on `${a}` went to the port (line 6, its name); the
# hints: `${n}` (a local) and `${a}` (the port) are long
grep -q '^fmt: <expression>${n} := ${a} \* 2L</expression>$' "$tmp/out.txt" \
  || { echo "nvim-check: <leader>f did not format"; exit 1; }
grep -q "^gd-expr: 6:18$" "$tmp/out.txt" || { echo "nvim-check: gd in an expression did not jump"; exit 1; }
grep -q "^local-hints: 7:24: long 7:32: long$" "$tmp/out.txt" \
  || { echo "nvim-check: no inlay hint of the local"; exit 1; }
echo "nvim-check: ok"
