//! JSON writing in both serialisations, and the names, hashes and counts the lines are made of.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// JSON writing.

pub(super) struct J<'a> {
    pub(super) out: &'a mut Vec<u8>,
    /// 2015 serialisation: `\uXXXX` for non-ASCII, `\/` for slashes.
    pub(super) legacy: bool,
}

impl J<'_> {
    pub(super) fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    pub(super) fn str(&mut self, s: &str) {
        self.out.push(b'"');
        for c in s.chars() {
            match c {
                '"' => self.raw("\\\""),
                '\\' => self.raw("\\\\"),
                '\n' => self.raw("\\n"),
                '\t' => self.raw("\\t"),
                '/' if self.legacy => self.raw("\\/"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(self.out, "\\u{:04x}", c as u32);
                }
                c if self.legacy && !c.is_ascii() => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        let _ = write!(self.out, "\\u{:04x}", unit);
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    self.out
                        .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        self.out.push(b'"');
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
            // Latin-script languages: mostly the same name, sometimes a local variant.
            if rng.random_bool(0.7) {
                base.to_string()
            } else {
                let mut s = base.to_string();
                s.push_str(["e", "o", "a", "us", "ia"][rng.random_range(0..5)]);
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

pub(super) fn hex(rng: &mut ChaCha8Rng, n: usize, upper: bool) -> String {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut s = String::with_capacity(n);
    let mut bits = 0u64;
    for i in 0..n {
        if i % 16 == 0 {
            bits = rng.random();
        }
        s.push(digits[(bits & 15) as usize] as char);
        bits >>= 4;
    }
    s
}

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
