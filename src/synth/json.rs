//! JSON writing in both serialisations, and the names, hashes and counts the lines are made of.

use super::*;
use crate::core::ids::push_u64;

// ---------------------------------------------------------------------------------------------------------
// JSON writing.

pub(super) struct J<'a> {
    pub(super) out: &'a mut Vec<u8>,
    /// 2015 serialisation: `\uXXXX` for non-ASCII, `\/` for slashes.
    pub(super) legacy: bool,
}

/// Bytes that `J::str` escapes: `MODERN` in both serialisations (`"`, `\\`, control characters), `LEGACY` in
/// the 2015 one (those, `/` and every byte of a non-ASCII character).
const MODERN: u8 = 1;
const LEGACY: u8 = 2;
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let modern = b == b'"' as usize || b == b'\\' as usize || b < 0x20;
        let legacy = modern || b == b'/' as usize || b >= 0x80;
        t[b] = ((modern as u8) * MODERN) | ((legacy as u8) * LEGACY);
        b += 1;
    }
    t
};

impl J<'_> {
    /// A JSON string of an id, `"Q42"` or `"P31"` (what `str(&id.to_string())` writes: no byte of it is
    /// escaped in either serialisation).
    pub(super) fn id(&mut self, letter: u8, n: u64) {
        self.out.push(b'"');
        self.out.push(letter);
        push_u64(self.out, n);
        self.out.push(b'"');
    }
    /// `"P31":`, as `key`.
    pub(super) fn key_id(&mut self, letter: u8, n: u64) {
        self.id(letter, n);
        self.out.push(b':');
    }
    /// A JSON string of decimal digits.
    pub(super) fn digits(&mut self, n: u64) {
        self.out.push(b'"');
        push_u64(self.out, n);
        self.out.push(b'"');
    }
    /// A JSON string of `n` random hex digits (as `str(&hex(rng, n, upper))`, with the same draws).
    pub(super) fn hex(&mut self, rng: &mut ChaCha8Rng, n: usize, upper: bool) {
        self.out.push(b'"');
        push_hex(self.out, rng, n, upper);
        self.out.push(b'"');
    }
    /// A statement GUID `"Q42$…"` (as `str(&guid(rng, entity))`, with the same draws; `entity` is an id,
    /// which no serialisation escapes).
    pub(super) fn guid(&mut self, rng: &mut ChaCha8Rng, entity: &str) {
        debug_assert!(entity.bytes().all(|b| b.is_ascii_alphanumeric()));
        let upper = rng.random_bool(0.5);
        self.out.push(b'"');
        self.out.extend_from_slice(entity.as_bytes());
        for (k, n) in [8, 4, 4, 4, 12].into_iter().enumerate() {
            self.out.push(if k == 0 { b'$' } else { b'-' });
            push_hex(self.out, rng, n, upper);
        }
        self.out.push(b'"');
    }
    /// The comma before element `i` of an array or an object (none before the first).
    pub(super) fn comma(&mut self, i: usize) {
        if i > 0 {
            self.out.push(b',');
        }
    }
    pub(super) fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    /// A JSON string. Runs of bytes that need no escape are copied at once (this is the generator's hottest
    /// function); the escapes are the ones the char-by-char rules give: `\"`, `\\`, `\n`, `\t`, `\u00XX`
    /// for other control characters, and in the 2015 serialisation `\/` and `\uXXXX` (UTF-16 units) for
    /// every non-ASCII character.
    pub(super) fn str(&mut self, s: &str) {
        self.out.push(b'"');
        let bytes = s.as_bytes();
        let mask = if self.legacy { LEGACY } else { MODERN };
        let (mut start, mut i) = (0, 0);
        while i < bytes.len() {
            let b = bytes[i];
            if ESCAPE[usize::from(b)] & mask == 0 {
                i += 1;
                continue;
            }
            self.out.extend_from_slice(&bytes[start..i]);
            if b >= 0x80 {
                // Only in the 2015 serialisation: the whole character as UTF-16 escapes.
                let c = s[i..].chars().next().unwrap_or('\u{FFFD}');
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    self.unicode_escape(*unit);
                }
                i += c.len_utf8();
            } else {
                match b {
                    b'"' => self.raw("\\\""),
                    b'\\' => self.raw("\\\\"),
                    b'\n' => self.raw("\\n"),
                    b'\t' => self.raw("\\t"),
                    b'/' => self.raw("\\/"),
                    _ => self.unicode_escape(u16::from(b)),
                }
                i += 1;
            }
            start = i;
        }
        self.out.extend_from_slice(&bytes[start..]);
        self.out.push(b'"');
    }
    /// `\uXXXX` with four lower-case hex digits.
    fn unicode_escape(&mut self, unit: u16) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.out.extend_from_slice(&[
            b'\\',
            b'u',
            HEX[usize::from(unit >> 12)],
            HEX[usize::from((unit >> 8) & 0xf)],
            HEX[usize::from((unit >> 4) & 0xf)],
            HEX[usize::from(unit & 0xf)],
        ]);
    }
    pub(super) fn key(&mut self, k: &str) {
        self.str(k);
        self.out.push(b':');
    }
    pub(super) fn num(&mut self, n: impl std::fmt::Display) {
        let _ = write!(self.out, "{n}");
    }
    /// `{}` or, in the 2015 serialisation, `[]`.
    pub(super) fn empty_map(&mut self) {
        self.raw(if self.legacy { "[]" } else { "{}" });
    }
}

pub(super) const SYLLABLES: [&str; 40] = [
    "ka", "lo", "ren", "mi", "sa", "to", "vel", "an", "dor", "is", "ma", "ri", "ton", "el", "bur",
    "ge", "nia", "por", "tu", "lin", "ca", "de", "ber", "ho", "st", "ay", "mont", "val", "ro",
    "sen", "fi", "ord", "ham", "qu", "ez", "ol", "wick", "ar", "un", "ville",
];

pub(super) fn latin_name(rng: &mut ChaCha8Rng, words: usize) -> String {
    let mut s = String::new();
    for w in 0..words {
        if w > 0 {
            s.push(' ');
        }
        let syl = rng.random_range(1..4);
        let start = s.len();
        for _ in 0..syl {
            s.push_str(SYLLABLES[rng.random_range(0..SYLLABLES.len())]);
        }
        if let Some(c) = s[start..].chars().next() {
            let up = c.to_ascii_uppercase();
            s.replace_range(start..start + 1, &up.to_string());
        }
    }
    s
}

/// A label in the script of `lang`, derived from the entity's Latin base name.
pub(super) fn script_name(lang: &str, base: &str, rng: &mut ChaCha8Rng) -> String {
    let range: Option<(u32, u32)> = match lang {
        "ja" => Some((0x3041, 0x3096)),
        "ko" => Some((0xAC00, 0xD7A3)),
        "zh" | "zh-hant" => Some((0x4E00, 0x9FA5)),
        "ru" | "uk" | "sr" | "be" | "bg" | "mk" => Some((0x0430, 0x044F)),
        "ar" | "fa" => Some((0x0627, 0x064A)),
        "he" => Some((0x05D0, 0x05EA)),
        "hi" => Some((0x0915, 0x0939)),
        "bn" => Some((0x0995, 0x09B9)),
        "ta" => Some((0x0B95, 0x0BB9)),
        "th" => Some((0x0E01, 0x0E2E)),
        "el" => Some((0x03B1, 0x03C9)),
        "hy" => Some((0x0561, 0x0586)),
        "ka" => Some((0x10D0, 0x10F0)),
        _ => None,
    };
    match range {
        None => {
            // Latin-script languages: mostly the same name, sometimes a local variant. English is the base
            // language (the curated property and class names are English), so it keeps the name; the draws are
            // made all the same, so that every other byte of a dump stays what it was.
            if rng.random_bool(0.7) {
                base.to_string()
            } else {
                let mut s = base.to_string();
                let variant = ["e", "o", "a", "us", "ia"][rng.random_range(0..5)];
                if lang != "en" {
                    s.push_str(variant);
                }
                s
            }
        }
        Some((lo, hi)) => {
            let n = (base.len() / 2).clamp(1, 12);
            let mut s = String::new();
            for (i, b) in base.bytes().take(n).enumerate() {
                if b == b' ' {
                    s.push(' ');
                    continue;
                }
                let cp = lo + (u32::from(b) * 7 + i as u32 * 13) % (hi - lo + 1);
                s.push(char::from_u32(cp).unwrap_or('?'));
            }
            // Now and then a character outside the Basic Multilingual Plane (a surrogate pair in \u form).
            if (lang == "ja" || lang == "zh") && rng.random_bool(0.02) {
                s.push('\u{20B9F}');
            }
            s
        }
    }
}

/// `n` random hex digits: one draw of 64 bits per 16 digits.
#[cfg(test)]
pub(super) fn hex(rng: &mut ChaCha8Rng, n: usize, upper: bool) -> String {
    let mut v = Vec::with_capacity(n);
    push_hex(&mut v, rng, n, upper);
    String::from_utf8(v).expect("hex digits")
}

fn push_hex(out: &mut Vec<u8>, rng: &mut ChaCha8Rng, n: usize, upper: bool) {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut bits = 0u64;
    for i in 0..n {
        if i % 16 == 0 {
            bits = rng.random();
        }
        out.push(digits[(bits & 15) as usize]);
        bits >>= 4;
    }
}

#[cfg(test)]
pub(super) fn guid(rng: &mut ChaCha8Rng, entity: &str) -> String {
    let upper = rng.random_bool(0.5);
    format!(
        "{entity}${}-{}-{}-{}-{}",
        hex(rng, 8, upper),
        hex(rng, 4, upper),
        hex(rng, 4, upper),
        hex(rng, 4, upper),
        hex(rng, 12, upper)
    )
}

/// Heavy-tailed count ≥ 1 with the given mean (Pareto, shape 1.6), capped.
pub(super) fn heavy(rng: &mut ChaCha8Rng, mean: f64, cap: u64) -> u64 {
    let alpha = 1.6;
    let xm = mean * (alpha - 1.0) / alpha;
    let u: f64 = 1.0 - rng.random::<f64>();
    ((xm / u.powf(1.0 / alpha)).round() as u64).clamp(1, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The escaping rules one character at a time (the generator's first implementation).
    fn reference(s: &str, legacy: bool) -> Vec<u8> {
        let mut out = vec![b'"'];
        for c in s.chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\t' => out.extend_from_slice(b"\\t"),
                '/' if legacy => out.extend_from_slice(b"\\/"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c if legacy && !c.is_ascii() => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        let _ = write!(out, "\\u{:04x}", unit);
                    }
                }
                c => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        out.push(b'"');
        out
    }

    fn fast(s: &str, legacy: bool) -> Vec<u8> {
        let mut out = Vec::new();
        J {
            out: &mut out,
            legacy,
        }
        .str(s);
        out
    }

    #[test]
    fn hand_made_escapes() {
        assert_eq!(
            fast("a\"b\\c\nd\te/f\u{1}", false),
            b"\"a\\\"b\\\\c\\nd\\te/f\\u0001\""
        );
        assert_eq!(fast("é/😀", true), b"\"\\u00e9\\/\\ud83d\\ude00\"");
        assert_eq!(fast("é/😀", false), "\"é/😀\"".as_bytes());
    }

    proptest! {
        /// The direct writers of ids, digits, hashes and GUIDs write what `str` of the formatted string wrote
        /// (the generator before they existed), with the same random draws after them.
        #[test]
        fn direct_writers_match_str_of_the_formatted_string(n: u64, seed: u64, legacy: bool, len in 0usize..50) {
            let mut a = Vec::new();
            let mut b = Vec::new();
            let (mut ra, mut rb) = (ChaCha8Rng::seed_from_u64(seed), ChaCha8Rng::seed_from_u64(seed));
            {
                let mut j = J { out: &mut a, legacy };
                j.id(b'Q', n);
                j.key_id(b'P', n);
                j.digits(n);
                j.hex(&mut ra, len, n % 2 == 0);
                j.guid(&mut ra, &format!("Q{n}"));
                j.num(ra.random::<u64>());
            }
            {
                let mut j = J { out: &mut b, legacy };
                j.str(&Qid(n).to_string());
                j.key(&Pid(n).to_string());
                j.str(&n.to_string());
                j.str(&hex(&mut rb, len, n % 2 == 0));
                j.str(&guid(&mut rb, &format!("Q{n}")));
                j.num(rb.random::<u64>());
            }
            prop_assert_eq!(a, b);
        }

        #[test]
        fn runs_of_plain_bytes_escape_like_one_character_at_a_time(s in "\\PC*|[\"\\\\/\\n\\t\\x00-\\x1f aé😀]*", legacy: bool) {
            prop_assert_eq!(fast(&s, legacy), reference(&s, legacy));
        }
    }
}
