//! Progress reporting shared by every stage.
//!
//! On a terminal: an indicatif bar (position, rate, ETA when the total is known). Elsewhere (nightly batch,
//! CI, a pipe): one log line on stderr every `SWORD_PROGRESS_SECS` seconds (default 10), so logs show that a
//! long stage is alive and how fast it goes, without flooding. `SWORD_QUIET=1` silences both.
//! `Progress` is `Sync`: worker threads call `inc` directly; the cost is one relaxed atomic add.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the counter counts, for formatting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes: shown as MB and MB/s.
    Bytes,
    /// Items of the given name (entities, walks, words, requests).
    Items(&'static str),
}

/// A thread-safe progress counter with terminal bar or periodic log lines.
pub struct Progress {
    what: String,
    unit: Unit,
    total: Option<u64>,
    pos: Arc<AtomicU64>,
    extra: AtomicU64,
    extra_name: Mutex<Option<&'static str>>,
    message: Mutex<String>,
    start: Instant,
    last_log: Mutex<Instant>,
    interval: Duration,
    bar: Option<ProgressBar>,
    quiet: bool,
}

fn quiet_from_env() -> bool {
    std::env::var("SWORD_QUIET").is_ok_and(|v| !v.is_empty() && v != "0")
}

impl Progress {
    /// Start reporting `what`, with an optional known total (bytes of input, number of nodes, ...).
    pub fn new(what: &str, total: Option<u64>, unit: Unit) -> Progress {
        let quiet = quiet_from_env();
        let interval = std::env::var("SWORD_PROGRESS_SECS")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(Duration::from_secs(10));
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = match total {
                Some(t) => ProgressBar::new(t),
                None => ProgressBar::new_spinner(),
            };
            bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let tmpl = match (unit, total.is_some()) {
                (Unit::Bytes, true) => "{prefix} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {msg}",
                (Unit::Bytes, false) => "{prefix} [{elapsed_precise}] {spinner} {bytes} {bytes_per_sec} {msg}",
                (Unit::Items(_), true) => "{prefix} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} {per_sec} ETA {eta} {msg}",
                (Unit::Items(_), false) => "{prefix} [{elapsed_precise}] {spinner} {human_pos} {per_sec} {msg}",
            };
            bar.set_style(ProgressStyle::with_template(tmpl).expect("valid template"));
            bar.set_prefix(what.to_string());
            bar
        });
        Progress {
            what: what.to_string(),
            unit,
            total,
            pos: Arc::new(AtomicU64::new(0)),
            extra: AtomicU64::new(0),
            extra_name: Mutex::new(None),
            message: Mutex::new(String::new()),
            start: Instant::now(),
            last_log: Mutex::new(Instant::now()),
            interval,
            bar,
            quiet,
        }
    }

    /// A reporter that shows nothing (tests, library use).
    pub fn hidden() -> Progress {
        let mut p = Progress::new("", None, Unit::Items(""));
        p.quiet = true;
        p.bar = None;
        p
    }

    /// Add `n` to the position.
    pub fn inc(&self, n: u64) {
        self.pos.fetch_add(n, Ordering::Relaxed);
        self.tick();
    }

    /// Add `n` to a secondary counter shown in the message (e.g. entities while the bar counts bytes).
    pub fn inc_extra(&self, name: &'static str, n: u64) {
        self.extra.fetch_add(n, Ordering::Relaxed);
        if let Ok(mut g) = self.extra_name.try_lock() {
            *g = Some(name);
        }
    }

    /// Set a free-form status message (e.g. `lr 0.0213 loss 2.41`) shown after the rate; cheap, call it
    /// every few thousand items, not per item.
    pub fn set_message(&self, msg: String) {
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_message(msg.clone());
        }
        if let Ok(mut g) = self.message.lock() {
            *g = msg;
        }
    }

    /// Current position.
    pub fn position(&self) -> u64 {
        self.pos.load(Ordering::Relaxed)
    }

    /// The position counter itself, for a thread that must not pass it (extract's input hash follows its
    /// reader: `FileRef::of_behind` in the store layer).
    pub fn position_handle(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.pos)
    }

    /// Seconds since start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn extra_text(&self) -> String {
        match self.extra_name.lock().ok().and_then(|g| *g) {
            Some(name) => format!("{} {name}", self.extra.load(Ordering::Relaxed)),
            None => String::new(),
        }
    }

    fn tick(&self) {
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_position(self.position());
            if self.extra_name.lock().map(|g| g.is_some()).unwrap_or(false) {
                bar.set_message(self.extra_text());
            }
            return;
        }
        let Ok(mut last) = self.last_log.try_lock() else {
            return;
        };
        if last.elapsed() >= self.interval {
            *last = Instant::now();
            drop(last);
            eprintln!("{}", self.line());
        }
    }

    /// One human-readable status line.
    pub fn line(&self) -> String {
        let pos = self.position();
        let secs = self.elapsed().max(1e-9);
        let (amount, rate) = match self.unit {
            Unit::Bytes => (
                format!("{:.1} MB", pos as f64 / 1e6),
                format!("{:.1} MB/s", pos as f64 / 1e6 / secs),
            ),
            Unit::Items(name) => (
                format!("{pos} {name}"),
                format!("{:.0} {name}/s", pos as f64 / secs),
            ),
        };
        let eta = match self.total {
            Some(t) if pos > 0 && t > pos => {
                format!(", ETA {:.0} s", (t - pos) as f64 * secs / pos as f64)
            }
            _ => String::new(),
        };
        let pct = match self.total {
            Some(t) if t > 0 => format!(" ({:.1}%)", 100.0 * pos as f64 / t as f64),
            _ => String::new(),
        };
        let extra = self.extra_text();
        let extra = if extra.is_empty() {
            extra
        } else {
            format!(", {extra}")
        };
        let message = match self.message.lock() {
            Ok(m) if !m.is_empty() => format!(", {m}"),
            _ => String::new(),
        };
        format!(
            "[{}] {amount}{pct}, {rate}{eta}{extra}{message}, {secs:.1} s",
            self.what
        )
    }

    /// Clear the bar and print a final line (unless quiet).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if !self.quiet {
            eprintln!("{} done", self.line());
        }
    }
}

/// Print a log line on stderr unless `SWORD_QUIET` is set.
pub fn log(msg: impl AsRef<str>) {
    if !quiet_from_env() {
        eprintln!("{}", msg.as_ref());
    }
}

/// CPU seconds used so far by the calling thread (`thread = true`) or by the whole process, from the kernel's
/// clocks; 0 where they cannot be read. A stage records them beside its wall times, so that a run says how much
/// of its work one thread did while the others waited or idled (the serial share an Amdahl fit needs).
pub fn cpu_seconds(thread: bool) -> f64 {
    #[cfg(unix)]
    {
        let clock = if thread {
            libc::CLOCK_THREAD_CPUTIME_ID
        } else {
            libc::CLOCK_PROCESS_CPUTIME_ID
        };
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the call only writes into it.
        if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    let _ = thread;
    0.0
}
