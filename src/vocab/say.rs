//! What the library has to tell the user while it works — a warning that
//! does not stop the work, a progress or status line — handed to a sink
//! the caller supplies. Only `cli` prints (to stderr); a library caller may
//! collect the notices or leave the default, which drops them.

use std::sync::Arc;

/// One thing to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Shown as `warning: …`.
    Warning(String),
    /// Shown as it is (progress, the endpoint's address, the drain).
    Line(String),
}

/// Where notices go: cheap to clone, shared by threads.
#[derive(Clone, Default)]
pub struct Say(Option<Arc<dyn Fn(Notice) + Send + Sync>>);

impl Say {
    pub fn to(f: impl Fn(Notice) + Send + Sync + 'static) -> Say {
        Say(Some(Arc::new(f)))
    }
    pub fn warn(&self, message: impl Into<String>) {
        self.tell(Notice::Warning(message.into()));
    }
    pub fn line(&self, line: impl Into<String>) {
        self.tell(Notice::Line(line.into()));
    }
    pub fn tell(&self, n: Notice) {
        if let Some(f) = &self.0 {
            f(n);
        }
    }
}

impl std::fmt::Debug for Say {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Say(sink)"
        } else {
            "Say(quiet)"
        })
    }
}
