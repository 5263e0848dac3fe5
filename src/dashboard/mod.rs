//! The web dashboard (issue 7): a small page, its JSON API and a live WebSocket.
//!
//! * [`history`]: state changes and sensor values in SQLite, written in batches by a thread
//!   on the house's change bus;
//! * [`api`]: the JSON endpoints under `/dashboard/api/`;
//! * [`ws`]: `WS /dashboard/ws`, the live event stream;
//! * the page (`/dashboard/`: `index.html`, `app.js`, `app.css`), embedded in the binary and
//!   served by [`asset`].
//!
//! The HTTP router (`crate::http`) gates the API and the WebSocket (a key with `read`
//! permission; the WebSocket takes it from the `key.<KEY>` subprotocol since browsers cannot
//! send headers there) and serves the assets without a key: they contain no data.

pub mod api;
pub mod history;
pub mod ws;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use serde_json::Value as Json;

use crate::home::House;
pub use history::{History, HistoryConfig, HistoryError};
pub use ws::{Hub, WsConfig};

/// The source of the AI activity feed: the newest `n` entries, newest first.
pub type ActivityFn = Arc<dyn Fn(usize) -> Vec<Json> + Send + Sync>;

/// Settings of the dashboard (`[dashboard]` in the config file).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DashboardConfig {
    pub history: HistoryConfig,
    pub ws: WsConfig,
}

/// The running dashboard: history recorder, WebSocket fan-out and what the routes need.
/// Share as `Arc<Dashboard>`; stop with [`Dashboard::shutdown`].
pub struct Dashboard {
    house: Arc<House>,
    history: Arc<History>,
    hub: Arc<Hub>,
    started: Instant,
    activity: Option<ActivityFn>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("history", &self.history)
            .field("ws_clients", &self.ws_clients())
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// A picture of the doorbell card for the camera `uuid` with its label: with `now` the
    /// camera's picture now, else the picture of its last ring (the Miniserver's, the camera
    /// is not asked; `NotFound` when it keeps none or has not rung). See [`House::picture`].
    /// Not kept.
    pub fn doorbell_picture(
        &self,
        uuid: &str,
        now: bool,
    ) -> Result<(crate::home::CameraPicture, String), crate::home::ControllerError> {
        use crate::home::{ControllerError, PictureAsk};
        let home = self.house.home();
        let c = home
            .control(uuid)
            .filter(|c| crate::home::camera::camera_kind(c).is_some())
            .ok_or_else(|| ControllerError::NotFound(format!("no camera {uuid}")))?;
        let ask = match (
            now,
            self.house.bell_events(c).and_then(|e| e.last().cloned()),
        ) {
            (true, _) => PictureAsk::Now,
            (false, Some(stamp)) => PictureAsk::BellEvent(stamp),
            (false, None) => {
                return Err(ControllerError::NotFound(format!(
                    "a picture of a ring of {} (it has none)",
                    c.name
                )))
            }
        };
        let pic = self.house.picture(c, ask)?;
        let label = crate::tools::view::label(&home, c);
        Ok((pic, label))
    }

    /// Starts the history recorder and the WebSocket fan-out over `house`'s change bus.
    /// Errors: a thread could not start.
    pub fn start(
        house: Arc<House>,
        history: History,
        ws: WsConfig,
    ) -> std::io::Result<Arc<Dashboard>> {
        let history = Arc::new(history);
        let recorder = history.spawn_recorder(house.clone())?;
        let dash = Self::over(house, history, ws)?;
        dash.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(recorder);
        Ok(dash)
    }

    /// Starts the WebSocket fan-out over `house`'s change bus and shows `history`, whose
    /// recorder runs elsewhere (the app's, which the history tools read too).
    pub fn over(
        house: Arc<House>,
        history: Arc<History>,
        ws: WsConfig,
    ) -> std::io::Result<Arc<Dashboard>> {
        let hub = Hub::new(ws);
        let threads = vec![hub.spawn_fanout(house.clone())?];
        Ok(Arc::new(Dashboard {
            house,
            history,
            hub,
            started: Instant::now(),
            activity: None,
            threads: Mutex::new(threads),
        }))
    }

    /// Connected WebSocket clients now.
    pub fn ws_clients(&self) -> usize {
        self.hub.clients()
    }

    /// The WebSocket hub (counters, limits).
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The history store.
    pub fn history(&self) -> &Arc<History> {
        &self.history
    }

    /// The activity feed's source (the audit log, when configured); without one `activity`
    /// is an empty list. Call before sharing the dashboard.
    pub fn with_activity(mut self: Arc<Self>, source: ActivityFn) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.activity = Some(source);
        } else {
            log::warn!("dashboard: activity source set after sharing; ignored");
        }
        self
    }

    /// The `hello` message a new WebSocket client gets first: `{"type": "system_event",
    /// "payload": {"event": "hello", "status": <GET /dashboard/api/status>}}`.
    pub fn hello(&self) -> String {
        ws::message(
            "system_event",
            serde_json::json!({"event": "hello", "status": api::status(self)}),
        )
    }

    /// Closes every WebSocket client (code 1001), commits the history and ends the threads.
    pub fn shutdown(&self) {
        self.hub.shutdown();
        self.history.stop();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// An embedded page asset: `(content type, body)` for `name` (`""` or `index.html`, `app.js`,
/// `app.css`), `None` for anything else.
pub fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "" | "index.html" => (
            "text/html; charset=utf-8",
            include_str!("../../assets/dashboard/index.html"),
        ),
        "app.js" => (
            "text/javascript; charset=utf-8",
            include_str!("../../assets/dashboard/app.js"),
        ),
        "app.css" => (
            "text/css; charset=utf-8",
            include_str!("../../assets/dashboard/app.css"),
        ),
        _ => return None,
    })
}

/// The Content-Security-Policy of the page: only its own script, style and connections.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; \
    frame-ancestors 'none'";
