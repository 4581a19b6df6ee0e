//! Keeping the API key and URL passwords out of everything the runner writes or prints.
//!
//! The runner sends the key (from `--api-key-env`) as `Authorization: Bearer KEY`, and a password in
//! `--base-url` (`http://user:pass@host/v1`) as `Authorization: Basic base64(user:pass)` (what the HTTP
//! client does with a URL's user info). A server may echo either back — in an error body ("invalid key
//! sk-…"), in an answer, in a redirect's `Location` — and the URL itself is copied into manifests, error
//! messages and cache keys. So:
//!
//! * [`redact_url`] replaces the password of a URL's user info with `***` (a user info without `:`, which
//!   is a token, entirely). It is the only form of the URL that is written, printed or hashed.
//! * [`Secrets::scrub`] replaces every occurrence of a secret — the key, the password (as written and
//!   percent-decoded), the whole user info, and the base64 form the server sees — with `[REDACTED]` in
//!   answers, errors, usage objects and `Location` headers before they reach the answer log.
//!
//! A secret shorter than [`MIN_SECRET_BYTES`] is not searched for in answer text (a key such as `x` or
//! `EMPTY`-style placeholders of local servers would otherwise wipe ordinary letters out of every answer);
//! it is still never written by the tool itself, since the key's value is not part of any output and the
//! URL is written only redacted.

use serde_json::Value;
use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest secret searched for in text (bytes).
pub const MIN_SECRET_BYTES: usize = 4;

/// The secrets of one run.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    /// Longest first, so that a secret containing another is replaced whole.
    items: Vec<String>,
}

/// Byte range of a URL's user info (before the last `@` of the authority), if any.
fn userinfo_range(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let rest = url.get(start..)?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest.get(..end)?.rfind('@')?;
    Some((start, start + at))
}

/// The URL with the password of its user info replaced by `***` (`http://u:***@h/v1`), or the whole user
/// info when it has no `:` (`http://***@h/v1`). Other URLs are returned unchanged.
pub fn redact_url(url: &str) -> String {
    let Some((s, e)) = userinfo_range(url) else {
        return url.to_string();
    };
    let info = url.get(s..e).unwrap_or_default();
    let kept = match info.find(':') {
        Some(c) => format!("{}:***", info.get(..c).unwrap_or_default()),
        None => "***".into(),
    };
    format!(
        "{}{kept}{}",
        url.get(..s).unwrap_or_default(),
        url.get(e..).unwrap_or_default()
    )
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| b.get(j).and_then(|&h| (h as char).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding (RFC 4648), as in an `Authorization: Basic` header.
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for k in 0..4 {
            if k <= chunk.len() {
                let idx = ((n >> (18 - 6 * k)) & 63) as usize;
                out.push(char::from(A.get(idx).copied().unwrap_or(b'=')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Secrets {
    /// The secrets of a run with this key (if any) and base URL.
    pub fn new(api_key: Option<&str>, base_url: &str) -> Secrets {
        let mut items: Vec<String> = Vec::new();
        if let Some(k) = api_key {
            items.push(k.to_string());
            items.push(k.trim().to_string());
        }
        if let Some((s, e)) = userinfo_range(base_url) {
            let info = base_url.get(s..e).unwrap_or_default();
            items.push(info.to_string());
            items.push(percent_decode(info));
            items.push(base64(info.as_bytes()));
            match info.find(':') {
                Some(c) => {
                    let pass = info.get(c + 1..).unwrap_or_default();
                    items.push(pass.to_string());
                    items.push(percent_decode(pass));
                }
                // A user info without a password is sent as `user:`.
                None => items.push(base64(format!("{info}:").as_bytes())),
            }
        }
        items.retain(|s| s.len() >= MIN_SECRET_BYTES);
        items.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        items.dedup();
        Secrets { items }
    }

    /// True when there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.items {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        out
    }

    /// Scrub a string in place; true when something was replaced.
    pub fn scrub_string(&self, text: &mut String) -> bool {
        match self.scrub(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(s) => {
                *text = s;
                true
            }
        }
    }

    /// Scrub every string (keys included) of a JSON value in place; true when something was replaced.
    pub fn scrub_value(&self, v: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match v {
            Value::String(s) => self.scrub_string(s),
            Value::Array(a) => a.iter_mut().fold(false, |hit, x| self.scrub_value(x) | hit),
            Value::Object(o) => {
                let mut hit = false;
                let old = std::mem::take(o);
                for (mut k, mut x) in old {
                    hit |= self.scrub_string(&mut k);
                    hit |= self.scrub_value(&mut x);
                    o.insert(k, x);
                }
                hit
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_only() {
        assert_eq!(redact_url("http://h:1/v1"), "http://h:1/v1");
        assert_eq!(
            redact_url("https://bob:s%40cret@h.example:8443/v1?x=@y"),
            "https://bob:***@h.example:8443/v1?x=@y"
        );
        assert_eq!(redact_url("http://tok123@h/v1"), "http://***@h/v1");
        // The last @ of the authority ends the user info (a password may contain @).
        assert_eq!(redact_url("http://u:p@ss@h/v1"), "http://u:***@h/v1");
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(redact_url("http://h/a@b"), "http://h/a@b");
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            // The header the HTTP client sends for martin:secret (its own test vector).
            ("martin:secret", "bWFydGluOnNlY3JldA=="),
        ] {
            assert_eq!(base64(i.as_bytes()), o, "{i}");
        }
    }

    #[test]
    fn every_form_of_a_secret_is_scrubbed() {
        let s = Secrets::new(Some("sk-very-secret"), "http://bob:pa%24%24word@h/v1");
        let text = "key sk-very-secret, basic Ym9iOnBhJTI0JTI0d29yZA==, raw pa%24%24word, \
                    decoded pa$$word, info bob:pa%24%24word";
        let got = s.scrub(text);
        for bad in ["sk-very", "pa$$", "pa%24", "Ym9iOnBh"] {
            assert!(!got.contains(bad), "{got}");
        }
        assert_eq!(got.matches(REDACTED).count(), 5, "{got}");
        let mut v = serde_json::json!({"a": ["x sk-very-secret"], "sk-very-secret": 1, "n": 2});
        assert!(s.scrub_value(&mut v));
        assert!(!v.to_string().contains("sk-very"), "{v}");
        assert_eq!(v["n"], 2);
        // Short placeholders are not searched for.
        let s = Secrets::new(Some("x"), "http://h/v1");
        assert!(s.is_empty());
        assert_eq!(s.scrub("x marks"), "x marks");
    }
}
