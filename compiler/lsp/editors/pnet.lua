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
    }
    if vim.lsp.start then
      vim.lsp.start(config)
    else -- Neovim 0.7 (Debian 12's): the same, by hand
      vim.lsp.buf_attach_client(args.buf, vim.lsp.start_client(config))
    end
  end,
})
