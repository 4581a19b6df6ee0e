//! Reading JSON Lines files as the eval commands do: line by line, every line checked to be UTF-8, every
//! error naming the file, the line (1-based) and the byte offset where that line starts.
//!
//! Shared by the samples, requests, Batch output and long-form readers, so that a stray byte in any of them
//! is the same exit-2 error (`FILE: line L, byte offset O: invalid UTF-8 …`) and never an I/O failure
//! without a position.

use crate::core::error::{Error, IoContext, Result};
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;

/// Position of a line: 1-based number and the byte offset of its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: u64,
    pub offset: u64,
}

impl Pos {
    /// An [`Error::Json`] at this line.
    pub fn err(self, path: &Path, what: impl Into<String>) -> Error {
        Error::Json {
            path: path.to_path_buf(),
            line: self.line,
            offset: self.offset,
            what: what.into(),
        }
    }
}

/// Call `f` with each non-blank line (without its `\n` / `\r\n`, and the first without a UTF-8 byte-order
/// mark) and its position. Invalid UTF-8 is an error naming the line, its offset and the bad byte's place in
/// the line.
pub fn for_each_line<R: BufRead>(
    mut r: R,
    path: &Path,
    mut f: impl FnMut(Pos, &str) -> Result<()>,
) -> Result<()> {
    let mut buf = Vec::new();
    let mut pos = Pos { line: 0, offset: 0 };
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).at(path)?;
        if n == 0 {
            return Ok(());
        }
        pos.line += 1;
        let here = pos;
        pos.offset = pos.offset.saturating_add(n as u64);
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t,
            Err(e) => {
                return Err(here.err(
                    path,
                    format!(
                        "invalid UTF-8 (byte {} of the line, file byte offset {}); a JSONL file is UTF-8 text",
                        e.valid_up_to(),
                        here.offset.saturating_add(e.valid_up_to() as u64)
                    ),
                ))
            }
        };
        let text = text.trim_end_matches(['\n', '\r']);
        // A UTF-8 byte-order mark (what some editors put first) is not part of the first value.
        let text = if here.line == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        if text.trim().is_empty() {
            continue;
        }
        f(here, text)?;
    }
}

/// Every non-blank line parsed as a JSON value, with its position.
pub fn read_values<R: BufRead>(r: R, path: &Path) -> Result<Vec<(Pos, Value)>> {
    let mut out = Vec::new();
    for_each_line(r, path, |pos, line| {
        let v: Value = serde_json::from_str(line).map_err(|e| pos.err(path, e.to_string()))?;
        out.push((pos, v));
        Ok(())
    })?;
    Ok(out)
}

/// Open `path` and read its values ([`read_values`]).
pub fn read_file_values(path: &Path) -> Result<Vec<(Pos, Value)>> {
    let f = std::fs::File::open(path).at(path)?;
    read_values(std::io::BufReader::new(f), path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_utf8_errors() {
        let p = Path::new("x.jsonl");
        let v = read_values(&b"{\"a\":1}\r\n\n  \n[2]"[..], p).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, Pos { line: 1, offset: 0 });
        assert_eq!(
            v[1].0,
            Pos {
                line: 4,
                offset: 13
            }
        );
        let e = read_values(&b"{}\n{\"a\":\"\xff\"}\n"[..], p).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(
                "line 2, byte offset 3: invalid UTF-8 (byte 6 of the line, file byte offset 9)"
            ),
            "{msg}"
        );
        assert_eq!(e.exit_code(), 2);
        let e = read_values(&b"{}\n{oops\n"[..], p).unwrap_err();
        assert!(e.to_string().contains("line 2, byte offset 3"), "{e}");
    }
}
