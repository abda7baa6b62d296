//! The HTTP side: the page, its assets and the live feed, behind the token.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use futures_util::Stream;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE_CSS: &str = include_str!("../assets/style.css");

#[derive(Clone)]
pub(crate) struct AppState {
    pub token: String,
    /// The latest snapshot as JSON.
    pub feed: tokio::sync::watch::Receiver<Arc<String>>,
    /// Reads a task's log (None: the source keeps none).
    pub logs: Option<crate::source::LogReader>,
}

pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/{token}", get(bare))
        .route("/{token}/", get(index))
        .route("/{token}/app.js", get(app_js))
        .route("/{token}/style.css", get(style_css))
        .route("/{token}/snapshot.json", get(snapshot))
        .route("/{token}/events", get(events))
        .route("/{token}/log/{job}/{task}", get(log))
        .fallback(|| async { not_found() })
        .with_state(Arc::new(state))
}

/// Compares without stopping at the first difference.
fn token_ok(state: &AppState, given: &str) -> bool {
    let (a, b) = (state.token.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn bare(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    Redirect::to(&format!("/{token}/")).into_response()
}

async fn index(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    asset("text/html; charset=utf-8", INDEX_HTML)
}

async fn app_js(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn style_css(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    asset("text/css; charset=utf-8", STYLE_CSS)
}

async fn snapshot(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    let json = s.feed.borrow().as_str().to_string();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        json,
    )
        .into_response()
}

async fn events(State(s): State<Arc<AppState>>, Path(token): Path<String>) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    let mut rx = s.feed.clone();
    rx.mark_changed();
    Sse::new(feed(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn log(
    State(s): State<Arc<AppState>>,
    Path((token, job, task)): Path<(String, u64, u64)>,
) -> Response {
    if !token_ok(&s, &token) {
        return not_found();
    }
    let Some(reader) = s.logs.clone() else {
        return (StatusCode::NOT_FOUND, "this source keeps no logs\n").into_response();
    };
    let text = tokio::task::spawn_blocking(move || reader(Some(job), task)).await;
    match text {
        Ok(Ok(t)) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], t).into_response(),
        Ok(Err(e)) => (StatusCode::BAD_GATEWAY, e).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Each new snapshot as one `snapshot` event; the current one first.
fn feed(
    rx: tokio::sync::watch::Receiver<Arc<String>>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        let json = rx.borrow_and_update().clone();
        Some((
            Ok(Event::default().event("snapshot").data(json.as_str())),
            rx,
        ))
    })
}
