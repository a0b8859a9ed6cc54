//! `pods/log` of containers running as local processes (`--run-pods`): the lines the query
//! asks for (`tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`, `limitBytes`,
//! `previous`) and, with `follow`, the lines that come until the process exits.

use std::{sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, header},
    response::Response,
};
use tokio::sync::watch;

use super::query::Query;
use crate::{
    error::ApiError,
    simulation::{
        process::{self, LogOptions},
        runtime::Instance,
    },
};

fn number(query: &Query, key: &str) -> Result<Option<u64>, ApiError> {
    query
        .get(key)
        .map(|text| text.parse::<u64>().map_err(|_| ApiError::bad_request(format!("{key}: {text:?} is not a number"))))
        .transpose()
}

/// The options of a log request.
pub fn options(query: &Query) -> Result<LogOptions, ApiError> {
    let since = match (number(query, "sinceSeconds")?, query.get("sinceTime")) {
        (Some(seconds), _) => Some(jiff::Timestamp::now() - Duration::from_secs(seconds)),
        (None, Some(time)) => Some(
            time.parse::<jiff::Timestamp>()
                .map_err(|e| ApiError::bad_request(format!("sinceTime: {time:?} is not an RFC 3339 time: {e}")))?,
        ),
        (None, None) => None,
    };
    let size = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(LogOptions {
        tail: size(number(query, "tailLines")?),
        since,
        timestamps: query.flag("timestamps"),
        limit_bytes: size(number(query, "limitBytes")?),
    })
}

/// The log of a container instance as the query asks; following it ends when the process
/// exits or the server shuts down.
pub fn serve(instance: Arc<Instance>, options: &LogOptions, follow: bool, shutdown: watch::Receiver<bool>) -> Response {
    let changes = instance.log.watcher();
    let (lines, position, closed) = instance.log.since(0);
    let mut first = process::render(process::select(&lines, options), options.timestamps);
    if let Some(limit) = options.limit_bytes {
        first.truncate(limit);
    }
    let body = if follow && !closed {
        let following = Following { instance, position, changes, shutdown, timestamps: options.timestamps };
        let head = futures::stream::once(async move { Ok(Bytes::from(first)) });
        Body::from_stream(futures::StreamExt::chain(head, futures::stream::unfold(following, Following::next)))
    } else {
        Body::from(first)
    };
    let mut response = Response::new(body);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// A followed log: where the reader is and what wakes it.
struct Following {
    instance: Arc<Instance>,
    position: u64,
    changes: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
    timestamps: bool,
}

impl Following {
    /// The next lines, once there are any; `None` once the process has exited and every line
    /// is sent, or the server shuts down.
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Following)> {
        loop {
            let (lines, next, closed) = self.instance.log.since(self.position);
            self.position = next;
            if !lines.is_empty() {
                let bytes = Bytes::from(process::render(&lines, self.timestamps));
                return Some((Ok(bytes), self));
            }
            if closed || *self.shutdown.borrow() {
                return None;
            }
            tokio::select! {
                changed = self.changes.changed() => if changed.is_err() { return None },
                _ = self.shutdown.changed() => {}
            }
        }
    }
}
