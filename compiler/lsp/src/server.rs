//! The protocol loop: lsp-server over stdio, one thread, every request answered (a panic in
//! a handler becomes an error response), diagnostics published after each batch of edits.
//! Logs go to stderr; stdout is the protocol channel.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeConfiguration, DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument,
    DidOpenTextDocument, DidSaveTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    CodeActionRequest, Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest,
    InlayHintRequest, PrepareRenameRequest, RangeFormatting, References, Rename, Request as _,
    SemanticTokensFullRequest, SignatureHelpRequest, WorkspaceSymbolRequest,
};
use lsp_types::{
    CompletionOptions, CompletionResponse, DiagnosticRelatedInformation, DiagnosticSeverity,
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, HoverProviderCapability,
    InitializeParams, Location, MarkupContent, MarkupKind, NumberOrString, OneOf,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentContentChangeEvent,
    TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use pnet_syntax::{Diagnostic, Severity};

use crate::analysis::{Analysis, options_from_json};
use crate::features;

type Error = Box<dyn std::error::Error + Send + Sync>;

pub fn run_stdio() -> Result<(), Error> {
    let (connection, io) = Connection::stdio();
    run(connection)?;
    io.join()?;
    Ok(())
}

pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        signature_help_provider: Some(lsp_types::SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into()]),
            retrigger_characters: None,
            work_done_progress_options: Default::default(),
        }),
        code_action_provider: Some(lsp_types::CodeActionProviderCapability::Options(
            lsp_types::CodeActionOptions {
                code_action_kinds: Some(vec![lsp_types::CodeActionKind::QUICKFIX]),
                ..Default::default()
            },
        )),
        semantic_tokens_provider: Some(
            lsp_types::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp_types::SemanticTokensOptions {
                    legend: lsp_types::SemanticTokensLegend {
                        token_types: crate::tokens::LEGEND.to_vec(),
                        token_modifiers: Vec::new(),
                    },
                    full: Some(lsp_types::SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    work_done_progress_options: Default::default(),
                },
            ),
        ),
        inlay_hint_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        document_range_formatting_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(lsp_types::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["{".into(), ".".into(), "\"".into()]),
            ..CompletionOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}

/// Serves one connection until `exit`.
pub fn run(connection: Connection) -> Result<(), Error> {
    let caps = serde_json::to_value(capabilities())?;
    let params = connection.initialize(caps)?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let options = params
        .initialization_options
        .as_ref()
        .map(options_from_json)
        .unwrap_or_default();
    eprintln!(
        "pnet-lsp: initialized (search paths: {:?})",
        options.search_paths
    );
    let mut s = Server {
        analysis: Analysis::new(options),
        published: BTreeMap::new(),
    };
    loop {
        let Ok(msg) = connection.receiver.recv() else {
            return Ok(());
        };
        let mut dirty = false;
        let mut next = Some(msg);
        // handle everything queued, then publish once
        while let Some(msg) = next.take() {
            match msg {
                Message::Request(req) => {
                    if connection.handle_shutdown(&req)? {
                        return Ok(());
                    }
                    if dirty {
                        s.publish(&connection)?;
                        dirty = false;
                    }
                    let resp = s.request(req);
                    connection.sender.send(Message::Response(resp))?;
                }
                Message::Notification(n) => {
                    if n.method == "exit" {
                        return Ok(());
                    }
                    dirty |= s.notification(n);
                }
                Message::Response(_) => {}
            }
            next = connection.receiver.try_recv().ok();
        }
        if dirty {
            s.publish(&connection)?;
        }
    }
}

struct Server {
    analysis: Analysis,
    published: BTreeMap<PathBuf, (Option<i32>, Vec<lsp_types::Diagnostic>)>,
}

pub fn uri_to_path(uri: &Uri) -> PathBuf {
    let s = uri.as_str();
    match s.strip_prefix("file://") {
        Some(rest) => PathBuf::from(percent_decode(rest)),
        None => PathBuf::from(s),
    }
}

pub fn path_to_uri(path: &Path) -> Uri {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&s).unwrap_or_else(|_| Uri::from_str("file:///").expect("uri"))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn apply_change(text: &mut String, change: &TextDocumentContentChangeEvent) {
    match change.range {
        None => *text = change.text.clone(),
        Some(r) => {
            let li = crate::line_index::LineIndex::new(text);
            let s = li.offset(text, r.start) as usize;
            let e = (li.offset(text, r.end) as usize).max(s);
            text.replace_range(s..e, &change.text);
        }
    }
}

impl Server {
    /// Returns whether diagnostics may have changed.
    fn notification(&mut self, n: Notification) -> bool {
        let method = n.method.clone();
        let r = catch_unwind(AssertUnwindSafe(|| self.notification_inner(n)));
        match r {
            Ok(dirty) => dirty,
            Err(_) => {
                eprintln!("pnet-lsp: panic while handling `{method}`; rebuilding the state");
                self.rebuild();
                true
            }
        }
    }

    /// After a panic: a fresh database over the same buffers.
    fn rebuild(&mut self) {
        let docs: Vec<(PathBuf, String, i32)> = self
            .analysis
            .docs
            .iter()
            .map(|(p, d)| (p.clone(), d.text.to_string(), d.version))
            .collect();
        let mut a = Analysis::new(self.analysis.options.clone());
        let _ = catch_unwind(AssertUnwindSafe(|| {
            for (p, t, v) in docs {
                a.open(p, &t, v);
            }
        }));
        self.analysis = a;
    }

    fn notification_inner(&mut self, n: Notification) -> bool {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                else {
                    return false;
                };
                let doc = p.text_document;
                self.analysis
                    .open(uri_to_path(&doc.uri), &doc.text, doc.version);
                true
            }
            DidChangeTextDocument::METHOD => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                else {
                    return false;
                };
                let path = uri_to_path(&p.text_document.uri);
                let version = p.text_document.version;
                let doc = self.analysis.docs.get(&path);
                // incremental sync: the byte ranges go to the database (it re-scans only
                // the items they touch); a full text (or a change without a range) as is
                if let Some(doc) = doc
                    && let [c] = p.content_changes.as_slice()
                    && let Some(r) = c.range
                {
                    let s = doc.index.offset(&doc.text, r.start) as usize;
                    let e = (doc.index.offset(&doc.text, r.end) as usize).max(s);
                    self.analysis
                        .edit(path, &[(s..e, c.text.as_str())], version);
                    return true;
                }
                let mut text = doc.map(|d| d.text.to_string()).unwrap_or_default();
                for c in &p.content_changes {
                    apply_change(&mut text, c);
                }
                self.analysis.change(path, &text, version);
                true
            }
            DidCloseTextDocument::METHOD => {
                let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                else {
                    return false;
                };
                self.analysis.close(&uri_to_path(&p.text_document.uri));
                true
            }
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => {
                self.analysis.refresh();
                true
            }
            DidChangeConfiguration::METHOD => {
                if let Some(settings) = n.params.get("settings")
                    && (settings.get("pnet").is_some() || settings.get("searchPaths").is_some())
                {
                    self.analysis.set_options(options_from_json(settings));
                    return true;
                }
                false
            }
            _ => false,
        }
    }

    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        let method = req.method.clone();
        match catch_unwind(AssertUnwindSafe(|| self.request_inner(req))) {
            Ok(Ok(v)) => Response::new_ok(id, v),
            Ok(Err((code, msg))) => Response::new_err(id, code as i32, msg),
            Err(_) => {
                eprintln!("pnet-lsp: panic while handling `{method}`");
                Response::new_err(
                    id,
                    ErrorCode::InternalError as i32,
                    format!("internal error in {method}"),
                )
            }
        }
    }

    fn request_inner(&mut self, req: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let bad = |e: serde_json::Error| (ErrorCode::InvalidParams, e.to_string());
        let a = &self.analysis;
        match req.method.as_str() {
            HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position_params.text_document.uri);
                let pos = p.text_document_position_params.position;
                let Some(off) = features::offset_in(a, &path, pos) else {
                    return Ok(serde_json::Value::Null);
                };
                let h = features::hover(a, &path, off).map(|(md, span)| Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: md,
                    }),
                    range: span.map(|(s, e)| features::range_in(a, &path, s, e)),
                });
                to_json(h)
            }
            GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position_params.text_document.uri);
                let pos = p.text_document_position_params.position;
                let Some(off) = features::offset_in(a, &path, pos) else {
                    return Ok(serde_json::Value::Null);
                };
                let locs = self.locations(features::definition(a, &path, off));
                to_json(Some(GotoDefinitionResponse::Array(locs)))
            }
            References::METHOD => {
                let p: lsp_types::ReferenceParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position.text_document.uri);
                let pos = p.text_document_position.position;
                let Some(off) = features::offset_in(a, &path, pos) else {
                    return Ok(serde_json::Value::Null);
                };
                let locs = features::references(a, &path, off, p.context.include_declaration);
                to_json(Some(self.locations(locs)))
            }
            Completion::METHOD => {
                let p: lsp_types::CompletionParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position.text_document.uri);
                let pos = p.text_document_position.position;
                let Some(off) = features::offset_in(a, &path, pos) else {
                    return Ok(serde_json::Value::Null);
                };
                to_json(Some(CompletionResponse::Array(features::completion(
                    a, &path, off,
                ))))
            }
            DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                to_json(Some(DocumentSymbolResponse::Nested(
                    features::document_symbols(a, &path),
                )))
            }
            PrepareRenameRequest::METHOD => {
                let p: lsp_types::TextDocumentPositionParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                let Some(off) = features::offset_in(a, &path, p.position) else {
                    return Ok(serde_json::Value::Null);
                };
                let r = crate::rename::prepare(a, &path, off).map(|((s, e), placeholder)| {
                    lsp_types::PrepareRenameResponse::RangeWithPlaceholder {
                        range: features::range_in(a, &path, s, e),
                        placeholder,
                    }
                });
                to_json(r)
            }
            Rename::METHOD => {
                let p: lsp_types::RenameParams = serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position.text_document.uri);
                let Some(off) = features::offset_in(a, &path, p.text_document_position.position)
                else {
                    return Ok(serde_json::Value::Null);
                };
                let locs = crate::rename::rename(a, &path, off, &p.new_name)
                    .map_err(|e| (ErrorCode::RequestFailed, e))?;
                // lsp-types' `WorkspaceEdit::changes` is keyed by `Uri`
                #[allow(clippy::mutable_key_type)]
                let mut changes: std::collections::HashMap<
                    Uri,
                    Vec<lsp_types::TextEdit>,
                > = std::collections::HashMap::new();
                for l in self.locations(locs) {
                    changes
                        .entry(l.uri)
                        .or_default()
                        .push(lsp_types::TextEdit::new(l.range, p.new_name.clone()));
                }
                to_json(lsp_types::WorkspaceEdit::new(changes))
            }
            WorkspaceSymbolRequest::METHOD => {
                let p: lsp_types::WorkspaceSymbolParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let syms = workspace_symbols(a, &p.query);
                to_json(Some(lsp_types::WorkspaceSymbolResponse::Flat(syms)))
            }
            SignatureHelpRequest::METHOD => {
                let p: lsp_types::SignatureHelpParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document_position_params.text_document.uri);
                let pos = p.text_document_position_params.position;
                let (Some(off), Some(doc)) =
                    (features::offset_in(a, &path, pos), a.docs.get(&path))
                else {
                    return Ok(serde_json::Value::Null);
                };
                let help = features::call_at(&doc.text, off as usize).map(signature_help);
                to_json(help)
            }
            CodeActionRequest::METHOD => {
                let p: lsp_types::CodeActionParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let uri = p.text_document.uri;
                let path = uri_to_path(&uri);
                let actions = code_actions(a, &uri, &path, &p.context.diagnostics);
                to_json(Some(actions))
            }
            SemanticTokensFullRequest::METHOD => {
                let p: lsp_types::SemanticTokensParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                to_json(Some(lsp_types::SemanticTokensResult::Tokens(
                    lsp_types::SemanticTokens {
                        result_id: None,
                        data: crate::tokens::semantic_tokens(a, &path),
                    },
                )))
            }
            InlayHintRequest::METHOD => {
                let p: lsp_types::InlayHintParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                let (Some(s), Some(e)) = (
                    features::offset_in(a, &path, p.range.start),
                    features::offset_in(a, &path, p.range.end),
                ) else {
                    return Ok(serde_json::Value::Null);
                };
                let hints = inlay_hints(a, &path, s, e);
                to_json(Some(hints))
            }
            Formatting::METHOD => {
                let p: lsp_types::DocumentFormattingParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                to_json(Some(text_edits(a, &path, None)))
            }
            RangeFormatting::METHOD => {
                let p: lsp_types::DocumentRangeFormattingParams =
                    serde_json::from_value(req.params).map_err(bad)?;
                let path = uri_to_path(&p.text_document.uri);
                let (Some(s), Some(e)) = (
                    features::offset_in(a, &path, p.range.start),
                    features::offset_in(a, &path, p.range.end),
                ) else {
                    return Ok(serde_json::Value::Null);
                };
                to_json(Some(text_edits(a, &path, Some((s, e)))))
            }
            m => Err((
                ErrorCode::MethodNotFound,
                format!("unsupported request `{m}`"),
            )),
        }
    }

    fn locations(&self, locs: Vec<features::Loc>) -> Vec<Location> {
        locs.into_iter()
            .map(|l| Location {
                uri: path_to_uri(&l.path),
                range: features::range_in(&self.analysis, &l.path, l.start, l.end),
            })
            .collect()
    }

    fn publish(&mut self, connection: &Connection) -> Result<(), Error> {
        let all = match catch_unwind(AssertUnwindSafe(|| self.analysis.diagnostics())) {
            Ok(d) => d,
            Err(_) => {
                eprintln!("pnet-lsp: panic while computing diagnostics; rebuilding the state");
                self.rebuild();
                return Ok(());
            }
        };
        let mut now = BTreeMap::new();
        for (path, diags) in all {
            let lsp: Vec<lsp_types::Diagnostic> =
                diags.iter().map(|d| self.to_lsp(&path, d)).collect();
            let version = self.analysis.docs.get(&path).map(|d| d.version);
            now.insert(path, (version, lsp));
        }
        // documents closed since: clear theirs
        for path in self.published.keys() {
            if !now.contains_key(path) {
                send_diags(connection, path, Vec::new(), None)?;
            }
        }
        for (path, entry) in &now {
            if self.published.get(path) != Some(entry) {
                send_diags(connection, path, entry.1.clone(), entry.0)?;
            }
        }
        self.published = now;
        Ok(())
    }

    fn to_lsp(&self, path: &Path, d: &Diagnostic) -> lsp_types::Diagnostic {
        let a = &self.analysis;
        let range = match d.primary_span() {
            Some(s) => features::range_in(a, path, s.start, s.end),
            None => lsp_types::Range::default(),
        };
        let mut message = d.message.clone();
        if let Some(l) = d.labels.iter().find(|l| l.primary)
            && !l.message.is_empty()
            && l.message != d.message
        {
            message.push_str(&format!("\n{}", l.message));
        }
        for n in &d.notes {
            message.push_str(&format!("\nnote: {n}"));
        }
        // secondary labels: same file only (file ids are per workspace)
        let primary_file = d.primary_span().map(|s| s.file);
        let related: Vec<DiagnosticRelatedInformation> = d
            .labels
            .iter()
            .filter(|l| !l.primary && Some(l.span.file) == primary_file)
            .map(|l| DiagnosticRelatedInformation {
                location: Location {
                    uri: path_to_uri(path),
                    range: features::range_in(a, path, l.span.start, l.span.end),
                },
                message: l.message.clone(),
            })
            .collect();
        lsp_types::Diagnostic {
            range,
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
            }),
            code: Some(NumberOrString::String(d.code.to_string())),
            source: Some("pnet".into()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            ..lsp_types::Diagnostic::default()
        }
    }
}

fn send_diags(
    connection: &Connection,
    path: &Path,
    diagnostics: Vec<lsp_types::Diagnostic>,
    version: Option<i32>,
) -> Result<(), Error> {
    let params = PublishDiagnosticsParams {
        uri: path_to_uri(path),
        diagnostics,
        version,
    };
    connection
        .sender
        .send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.to_string(),
            params,
        )))?;
    Ok(())
}

fn to_json(v: impl serde::Serialize) -> Result<serde_json::Value, (ErrorCode, String)> {
    serde_json::to_value(v).map_err(|e| (ErrorCode::InternalError, e.to_string()))
}

#[allow(deprecated)] // `SymbolInformation::deprecated`
fn workspace_symbols(a: &Analysis, query: &str) -> Vec<lsp_types::SymbolInformation> {
    features::workspace_symbols(a, query)
        .into_iter()
        .map(|w| lsp_types::SymbolInformation {
            name: w.name,
            kind: w.kind,
            tags: None,
            deprecated: None,
            location: Location {
                uri: path_to_uri(&w.loc.path),
                range: features::range_in(a, &w.loc.path, w.loc.start, w.loc.end),
            },
            container_name: Some(w.container),
        })
        .collect()
}

/// The signature of built-in `f`, its argument `arg` active.
fn signature_help((f, arg): (pnet_stdlib::Builtin, usize)) -> lsp_types::SignatureHelp {
    let label = f.signature().to_string();
    let params: Vec<lsp_types::ParameterInformation> = features::parameter_ranges(&label)
        .into_iter()
        .map(|(s, e)| lsp_types::ParameterInformation {
            label: lsp_types::ParameterLabel::LabelOffsets([s, e]),
            documentation: None,
        })
        .collect();
    let active = (arg < params.len()).then_some(arg as u32);
    lsp_types::SignatureHelp {
        signatures: vec![lsp_types::SignatureInformation {
            label,
            documentation: Some(lsp_types::Documentation::String("built-in function".into())),
            parameters: Some(params),
            active_parameter: active,
        }],
        active_signature: Some(0),
        active_parameter: active,
    }
}

/// The quick fixes of the diagnostics the client sends (those of the document `uri`).
fn code_actions(
    a: &Analysis,
    uri: &Uri,
    path: &Path,
    diagnostics: &[lsp_types::Diagnostic],
) -> Vec<lsp_types::CodeActionOrCommand> {
    let mut actions = Vec::new();
    for d in diagnostics {
        let Some(NumberOrString::String(code)) = &d.code else {
            continue;
        };
        let (Some(s), Some(e)) = (
            features::offset_in(a, path, d.range.start),
            features::offset_in(a, path, d.range.end),
        ) else {
            continue;
        };
        for fix in crate::actions::quick_fixes(a, path, code, &d.message, s, e) {
            let edits = fix
                .edits
                .iter()
                .map(|r| {
                    lsp_types::TextEdit::new(
                        features::range_in(a, path, r.start, r.end),
                        r.text.clone(),
                    )
                })
                .collect();
            // lsp-types' `WorkspaceEdit::changes` is keyed by `Uri`
            #[allow(clippy::mutable_key_type)]
            let changes = std::collections::HashMap::from([(uri.clone(), edits)]);
            actions.push(lsp_types::CodeActionOrCommand::CodeAction(
                lsp_types::CodeAction {
                    title: fix.title,
                    kind: Some(lsp_types::CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![d.clone()]),
                    edit: Some(lsp_types::WorkspaceEdit::new(changes)),
                    is_preferred: Some(fix.preferred),
                    ..Default::default()
                },
            ));
        }
    }
    actions
}

/// The formatting edits of the expression texts of `path` (in the byte range `range`).
fn text_edits(a: &Analysis, path: &Path, range: Option<(u32, u32)>) -> Vec<lsp_types::TextEdit> {
    crate::format::formatting(a, path, range)
        .into_iter()
        .map(|e| lsp_types::TextEdit::new(features::range_in(a, path, e.start, e.end), e.text))
        .collect()
}

fn inlay_hints(a: &Analysis, path: &Path, start: u32, end: u32) -> Vec<lsp_types::InlayHint> {
    let mut hints = crate::tokens::inlay_hints(a, path, start, end);
    hints.extend(crate::hints::local_hints(a, path, start, end));
    hints.sort_by_key(|h| h.0);
    hints
        .into_iter()
        .map(|(at, label)| lsp_types::InlayHint {
            position: features::range_in(a, path, at, at).start,
            label: lsp_types::InlayHintLabel::String(label),
            kind: Some(lsp_types::InlayHintKind::TYPE),
            text_edits: None,
            tooltip: None,
            padding_left: None,
            padding_right: None,
            data: None,
        })
        .collect()
}
