//! Is this a Wikidata dump at all? Checks made before (and while) the bytes are parsed, so that an HTML error
//! page, a zip file, a PDF or an empty file saved under a dump's name is refused at once with a message that
//! says what the file looks like, instead of being read as a dump with every line malformed (or none at all).
//!
//! A dump's decompressed stream begins, after optional whitespace, with `[` (the JSON array of the official
//! dumps, one entity per line) or `{` (one entity per line without the array).

use super::Format;
use crate::core::error::{Error, Result};
use std::path::Path;

/// Refuse a path that cannot be a dump file before anything is created: a directory (exit 2). A missing file
/// stays an I/O error (exit 4), raised where the file is opened. `-` (stdin) always passes.
pub fn check_path(path: &Path) -> Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(Error::bad_input(
            path,
            "is a directory, not a dump file: pass the dump file itself \
             (e.g. DIR/wikidata-YYYYMMDD-all.json.gz)",
        ));
    }
    Ok(())
}

/// Whether `path` is read as a stream, once, front to back: stdin (`-`), or a path that is no regular file (a
/// named pipe such as `mkfifo dump.json; sword synth --out dump.json & sword extract --dump dump.json`, or
/// `/dev/stdin`). A stream is neither memory-mapped nor read a second time to hash it: its first bytes are
/// peeked through a buffer to sniff the format, and the manifest records its path and size without a hash.
pub fn is_stream(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The error for a file of 0 bytes.
pub fn empty_file(path: &Path) -> Error {
    Error::bad_input(
        path,
        "not a Wikidata JSON dump: the file is empty (0 bytes), usually a download that failed before its \
         first byte; download the dump again (scripts/fetch-dump.sh resumes and verifies it)",
    )
}

/// The error for a compressed stream (or stdin) that holds no byte of JSON.
pub fn empty_stream(path: &Path, format: Option<Format>) -> Error {
    let what = match format {
        Some(Format::Plain) | None => "holds no data".to_string(),
        Some(f) => format!("is {} data that decompresses to 0 bytes", f.as_str()),
    };
    Error::bad_input(
        path,
        format!("not a Wikidata JSON dump: it {what}; download the dump again"),
    )
}

/// Check the first bytes of the decompressed stream (`head`: the first chunk, or more). Returns an error that
/// names `path` and says what the bytes look like when they do not begin like a dump. A head of whitespace
/// only is not judged here (the stage refuses a stream without any entity line later).
pub fn check_start(path: &Path, format: Format, head: &[u8]) -> Result<()> {
    let Some(i) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Ok(());
    };
    let rest = head.get(i..).unwrap_or_default();
    if matches!(rest.first(), Some(b'[' | b'{')) {
        return Ok(());
    }
    let (looks, advice) = looks_like(rest);
    let subject = match format {
        Format::Plain => "it".to_string(),
        f => format!("its {}-compressed content", f.as_str()),
    };
    Err(Error::bad_input(
        path,
        format!(
            "not a Wikidata JSON dump: {subject} looks like {looks}, while a dump begins with `[` (or `{{` \
             with one entity per line); {advice}"
        ),
    ))
}

const CHECK_PATH: &str =
    "check that --dump names the Wikidata JSON dump (.json, .json.gz, .json.bz2 or .json.zst)";

/// What bytes that are not JSON look like, and what to do about it.
pub fn looks_like(b: &[u8]) -> (String, &'static str) {
    let starts = |m: &[u8]| b.starts_with(m);
    let lower: Vec<u8> = b.iter().take(4096).map(u8::to_ascii_lowercase).collect();
    let has = |m: &[u8]| memchr::memmem::find(&lower, m).is_some();
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") || starts(b"PK\x07\x08") {
        return (
            "a zip archive".into(),
            "unzip it and pass the .json inside, or use the .json.gz / .json.bz2 dump",
        );
    }
    if starts(b"%PDF") {
        return ("a PDF document".into(), CHECK_PATH);
    }
    if starts(&[0x1f, 0x8b])
        || starts(b"BZh")
        || starts(&[0x28, 0xb5, 0x2f, 0xfd])
        || super::is_zstd_skippable(b)
    {
        return (
            "compressed data (compressed twice?)".into(),
            "decompress it once and pass the result",
        );
    }
    if starts(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        return (
            "xz-compressed data (not supported)".into(),
            "decompress it with `xz -d`, or use the .json.gz / .json.bz2 dump",
        );
    }
    if starts(b"7z\xbc\xaf\x27\x1c") || starts(b"Rar!") || lower.get(257..262) == Some(b"ustar") {
        return (
            "an archive (7z, rar or tar)".into(),
            "extract the .json dump from it and pass that",
        );
    }
    if starts(&[0xef, 0xbb, 0xbf]) {
        return (
            "text with a UTF-8 byte-order mark".into(),
            "remove the first three bytes (the dumps have none), or download the dump again",
        );
    }
    if b.first() == Some(&b'<') {
        if has(b"<html") || has(b"<!doctype html") || has(b"<body") || has(b"<head") {
            let title = html_text(b);
            let what = if title.is_empty() {
                "an HTML page".to_string()
            } else {
                format!("an HTML page (\"{title}\")")
            };
            return (
                what,
                "this is usually the error page of a failed download; download the dump again \
                 (scripts/fetch-dump.sh verifies it against the published checksums)",
            );
        }
        return ("XML or other markup".into(), CHECK_PATH);
    }
    let sample = &b[..b.len().min(512)];
    let binary = sample.contains(&0)
        || std::str::from_utf8(sample).is_err_and(|e| e.valid_up_to() + 4 < sample.len())
        || sample
            .iter()
            .filter(|&&c| c < 0x20 && !matches!(c, b'\n' | b'\r' | b'\t'))
            .count()
            * 20
            > sample.len();
    if binary {
        let hex: Vec<String> = b.iter().take(8).map(|c| format!("{c:02x}")).collect();
        return (
            format!("binary data (first bytes {})", hex.join(" ")),
            CHECK_PATH,
        );
    }
    let line = b.split(|&c| c == b'\n').next().unwrap_or(b);
    let text: String = String::from_utf8_lossy(&line[..line.len().min(60)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    (
        format!("text that is not JSON (\"{}\")", text.trim()),
        CHECK_PATH,
    )
}

/// The title of an HTML page, or its first text, shortened: what a person recognises ("503 Service
/// Unavailable").
fn html_text(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(8192)]).into_owned();
    let lower = s.to_ascii_lowercase();
    let inner = match (lower.find("<title>"), lower.find("</title>")) {
        (Some(a), Some(z)) if z > a + 7 => s[a + 7..z].to_string(),
        _ => {
            // The text between tags.
            let mut out = String::new();
            let mut in_tag = false;
            for c in s.chars() {
                match c {
                    '<' => {
                        in_tag = true;
                        out.push(' ');
                    }
                    '>' => in_tag = false,
                    _ if !in_tag => out.push(c),
                    _ => {}
                }
            }
            out
        }
    };
    let words: Vec<&str> = inner.split_whitespace().collect();
    let mut t = words.join(" ");
    if t.chars().count() > 80 {
        t = t.chars().take(77).collect::<String>() + "...";
    }
    t.replace('"', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(head: &[u8], format: Format) -> String {
        match check_start(Path::new("d.json"), format, head) {
            Ok(()) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn dumps_pass_and_other_things_are_named() {
        for ok in [
            &b"[\n{"[..],
            b"  \n\t[",
            b"{\"type\":\"item\"}",
            b"",
            b"   \n",
        ] {
            assert_eq!(msg(ok, Format::Plain), "ok", "{ok:?}");
        }
        let html = b"<html><body>503 Service Unavailable</body></html>";
        let m = msg(html, Format::Plain);
        assert!(
            m.contains("d.json")
                && m.contains("HTML page")
                && m.contains("503 Service Unavailable"),
            "{m}"
        );
        let m = msg(
            b"<!DOCTYPE html>\n<html><head><title>Not Found</title>",
            Format::Gzip,
        );
        assert!(
            m.contains("gzip-compressed content looks like an HTML page (\"Not Found\")"),
            "{m}"
        );
        assert!(msg(b"PK\x03\x04\x14\x00", Format::Plain).contains("zip archive"));
        assert!(msg(b"%PDF-1.7\n", Format::Plain).contains("PDF"));
        assert!(
            msg(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0], Format::Plain).contains("binary data")
        );
        assert!(msg(b"hello world\n", Format::Plain)
            .contains("text that is not JSON (\"hello world\")"));
        assert!(msg(&[0x1f, 0x8b, 8, 0], Format::Gzip).contains("compressed twice"));
        assert!(msg(b"\xef\xbb\xbf[\n", Format::Plain).contains("byte-order mark"));
    }
}
