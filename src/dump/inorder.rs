//! The in-order machinery the parallel decoders share (gzip members, bzip2 blocks): tasks run on the rayon
//! pool, their results come back over a channel, and the coordinator takes them in input order.

use std::sync::mpsc;
use std::time::Duration;

/// Wait for one task message, helping the pool meanwhile when this thread belongs to it (so a one-thread pool
/// cannot deadlock on its own coordinator).
pub(crate) fn wait_one<M>(rx: &mpsc::Receiver<M>) -> M {
    loop {
        if let Ok(m) = rx.try_recv() {
            return m;
        }
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => continue,
            Some(rayon::Yield::Idle) => {
                if let Ok(m) = rx.recv_timeout(Duration::from_micros(500)) {
                    return m;
                }
            }
            None => return rx.recv().expect("coordinator holds a sender"),
        }
    }
}
