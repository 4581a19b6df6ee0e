//! Sizes in bytes as the flags and config files give them (`64M`, `8G`, `1.5G`, `4194304`), parsed once into
//! a type ([`ByteSize`]) so that no stage keeps the text and parses it again, and the settings that are a size,
//! `auto` or `none` ([`SizeSetting`]).

use std::fmt;
use std::str::FromStr;

/// A number of bytes, written with an optional suffix K, M, G or T (powers of 1024) or B (bytes), case
/// insensitive, and a decimal number (`1.5G`); what does not fit a `u64` is no size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// Text that is not a size (see [`ByteSize`]); the caller names the flag in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotASize;

impl fmt::Display for NotASize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected a size such as 64M, 8G or 1.5G (K, M, G, T: powers of 1024)")
    }
}

impl std::error::Error for NotASize {}

impl FromStr for ByteSize {
    type Err = NotASize;

    fn from_str(t: &str) -> Result<ByteSize, NotASize> {
        let t = t.trim();
        let (num, mul) = match t.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let mul: u64 = match c.to_ascii_uppercase() {
                    'K' => 1 << 10,
                    'M' => 1 << 20,
                    'G' => 1 << 30,
                    'T' => 1 << 40,
                    'B' => 1,
                    _ => return Err(NotASize),
                };
                (t.get(..i).unwrap_or(""), mul)
            }
            _ => (t, 1),
        };
        let x: f64 = num.trim().parse().map_err(|_| NotASize)?;
        if !x.is_finite() || x < 0.0 {
            return Err(NotASize);
        }
        let bytes = x * mul as f64;
        if bytes < u64::MAX as f64 {
            Ok(ByteSize(bytes as u64))
        } else {
            Err(NotASize)
        }
    }
}

/// A setting that is a size, `auto` (the caller's default, worked out when it is used) or `none` (no bound);
/// the two words in any case, with blanks around them or a size allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSetting {
    Auto,
    None,
    Size(ByteSize),
}

impl FromStr for SizeSetting {
    type Err = NotASize;

    fn from_str(s: &str) -> Result<SizeSetting, NotASize> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("none") {
            Ok(SizeSetting::None)
        } else if t.eq_ignore_ascii_case("auto") {
            Ok(SizeSetting::Auto)
        } else {
            t.parse().map(SizeSetting::Size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_are_powers_of_1024_with_or_without_a_suffix() {
        let cases: [(&str, u64); 12] = [
            ("0", 0),
            ("512", 512),
            ("512B", 512),
            ("4096K", 4 << 20),
            ("4096k", 4 << 20),
            ("64M", 64 << 20),
            (" 64m ", 64 << 20),
            ("8g", 8 << 30),
            ("1.5G", 3 << 29),
            ("2T", 2 << 40),
            ("0.5K", 512),
            ("1 M", 1 << 20),
        ];
        for (text, bytes) in cases {
            assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize(bytes)), "{text:?}");
        }
    }

    #[test]
    fn what_is_no_size_is_refused() {
        for bad in [
            "", " ", "x", "M", "-1G", "1Q", "nanM", "infG", "1e30T", "1.5.5M", "auto", "none",
            "64MB",
        ] {
            assert_eq!(bad.parse::<ByteSize>(), Err(NotASize), "{bad:?}");
        }
        assert!(NotASize.to_string().contains("64M, 8G or 1.5G"));
    }

    #[test]
    fn settings_are_auto_none_or_a_size() {
        assert_eq!("auto".parse(), Ok(SizeSetting::Auto));
        assert_eq!(" AUTO ".parse(), Ok(SizeSetting::Auto));
        assert_eq!("None".parse(), Ok(SizeSetting::None));
        assert_eq!("4M".parse(), Ok(SizeSetting::Size(ByteSize(4 << 20))));
        assert_eq!("automatic".parse::<SizeSetting>(), Err(NotASize));
    }

    proptest! {
        /// Any size written in bytes or in whole K, M, G or T (either case) reads back as itself.
        #[test]
        fn a_written_size_reads_back(n in 0u64..(1 << 40), unit in 0usize..5, lower in any::<bool>()) {
            let (suffix, shift) = [("", 0), ("K", 10), ("M", 20), ("G", 30), ("T", 40)][unit];
            let n = n >> shift;
            let suffix = if lower { suffix.to_lowercase() } else { suffix.to_string() };
            let text = format!("{n}{suffix}");
            prop_assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize(n << shift)));
            prop_assert_eq!(text.parse::<SizeSetting>(), Ok(SizeSetting::Size(ByteSize(n << shift))));
        }
    }
}
