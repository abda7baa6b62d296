// A minimal generic client: starts pnet-lsp over stdio for xpnet files.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const cfg = vscode.workspace.getConfiguration("pnet");
  client = new LanguageClient(
    "pnet-lsp",
    "pnet-lsp",
    { command: cfg.get("serverPath"), args: [] },
    {
      documentSelector: [{ scheme: "file", language: "xpnet" }],
      initializationOptions: {
        searchPaths: cfg.get("searchPaths"),
        warnings: cfg.get("warnings"),
      },
    }
  );
  context.subscriptions.push(client);
  client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
