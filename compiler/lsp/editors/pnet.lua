-- pnet-lsp for Neovim 0.9+: put this file in ~/.config/nvim/plugin/ (or source it from
-- init.lua). It starts pnet-lsp for *.xpnet files (and for *.xml files whose root element
-- is a GPI-Space one), rooted at the nearest folder holding a .git or Cargo.toml.
vim.filetype.add({ extension = { xpnet = "xpnet" } })
vim.cmd("autocmd BufRead,BufNewFile *.xpnet setfiletype xpnet") -- for Neovim 0.7

vim.api.nvim_create_autocmd("FileType", {
  pattern = { "xpnet" },
  callback = function(args)
    local path = vim.api.nvim_buf_get_name(args.buf)
    local config = {
      name = "pnet-lsp",
      cmd = { vim.env.PNET_LSP or "pnet-lsp" },
      root_dir = vim.fn.fnamemodify(vim.fn.finddir(".git", path .. ";") , ":p:h:h"),
      init_options = {
        -- -I/--search-path, in order
        searchPaths = { vim.env.PNET_SEARCH_PATH or "/opt/gpispace/share/xml/lib" },
        -- as on the pnetc command line, without the leading --W: "all", "error",
        -- "no-unused-field", "unused-field=false", ...
        warnings = { "all" },
      },
      -- key mappings, for this buffer only (on_attach works in Neovim 0.7 as in 0.9+)
      on_attach = function(_, bufnr)
        local function map(keys, fn, desc)
          vim.keymap.set("n", keys, fn, { buffer = bufnr, silent = true, desc = desc })
        end
        map("K", vim.lsp.buf.hover, "pnet: hover")
        map("gd", vim.lsp.buf.definition, "pnet: go to definition")
        map("gr", vim.lsp.buf.references, "pnet: references")
        map("<leader>rn", vim.lsp.buf.rename, "pnet: rename")
        map("<leader>ca", vim.lsp.buf.code_action, "pnet: code action")
        map("[d", vim.diagnostic.goto_prev, "previous diagnostic")
        map("]d", vim.diagnostic.goto_next, "next diagnostic")
        -- format the expressions and conditions (only their texts change)
        map("<leader>f", function()
          if vim.lsp.buf.format then
            vim.lsp.buf.format({ bufnr = bufnr, timeout_ms = 5000 })
          else -- Neovim 0.7
            vim.lsp.buf.formatting_sync(nil, 5000)
          end
        end, "pnet: format expressions")
      end,
    }
    if vim.lsp.start then
      vim.lsp.start(config)
    else -- Neovim 0.7 (Debian 12's): the same, by hand
      vim.lsp.buf_attach_client(args.buf, vim.lsp.start_client(config))
    end
  end,
})
