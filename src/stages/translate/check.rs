//! Checks of one generated statement text (`text_ok` and its reason in `statements_text.parquet`).
//!
//! In this order, the first that applies is the reason:
//! * `<think>…</think>` blocks (reasoning models) are stripped first, and an unclosed `<think>` drops the
//!   rest of the answer; this is counted, not a failure by itself.
//! * `empty`: nothing left after stripping and trimming.
//! * `echo`: the answer contains the prompt, or a bracketed span `[…]` holding all three labels (the input
//!   triple handed back). A sentence that uses the three labels without brackets is the expected answer.
//! * `too_long`: more than [`max_chars`] characters: far more than one sentence about three labels.
//! * `wrong_script`: fewer than half of the letters are in the language's script (Hangul for ko; kana or
//!   kanji for ja; Latin for en, fr, de, es, it, pt). Half, not one: a small model asked for Korean often
//!   answers "The Korean language writing expert has crafted a sentence…" with one Hangul word, or a
//!   Japanese sentence followed by an English comment on it. Other languages are not checked.
//! * `wrong_language`: a Latin-script answer written in English instead of fr, de, es, it or pt (or in one
//!   of those instead of en): at least three function words of the other language and more than twice as
//!   many as of the asked one ([`FUNCTION_WORDS`]). Labels are not function words, so a sentence that is
//!   mostly the three labels passes.

/// Why a text is not usable; `None` = usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    Empty,
    Echo,
    TooLong,
    WrongScript,
    WrongLanguage,
}

impl Reason {
    /// The name written in the `text_reason` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Empty => "empty",
            Reason::Echo => "echo",
            Reason::TooLong => "too_long",
            Reason::WrongScript => "wrong_script",
            Reason::WrongLanguage => "wrong_language",
        }
    }

    /// All reasons, in check order.
    pub const ALL: [Reason; 5] = [
        Reason::Empty,
        Reason::Echo,
        Reason::TooLong,
        Reason::WrongScript,
        Reason::WrongLanguage,
    ];
}

/// A checked answer: the text to keep (think blocks stripped, trimmed) and the verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    pub text: String,
    pub reason: Option<Reason>,
    /// A `<think>` block was removed.
    pub think_stripped: bool,
}

impl Checked {
    /// Whether the text may go to evaluation.
    pub fn ok(&self) -> bool {
        self.reason.is_none()
    }
}

/// Byte position of the ASCII `needle` in `hay` at or after `from`, ignoring ASCII case (a match starts
/// with an ASCII byte, so it is always on a character boundary).
fn find_ci(hay: &str, from: usize, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    (from..=h.len().checked_sub(n.len())?).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// Remove `<think>…</think>` blocks (tags in any case); an unclosed `<think>` drops everything after it, and
/// a closing tag without an opening one (the opening tag was in a prefill) drops everything before it.
/// Returns the remaining text and whether anything was removed.
pub fn strip_think(s: &str) -> (String, bool) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let mut out = String::with_capacity(s.len());
    let mut pos = 0;
    let mut stripped = false;
    if let Some(c) = find_ci(s, 0, CLOSE).filter(|&c| find_ci(&s[..c], 0, OPEN).is_none()) {
        pos = c + CLOSE.len();
        stripped = true;
    }
    while let Some(i) = find_ci(s, pos, OPEN) {
        out.push_str(&s[pos..i]);
        stripped = true;
        match find_ci(s, i + OPEN.len(), CLOSE) {
            Some(j) => pos = j + CLOSE.len(),
            None => {
                pos = s.len();
                break;
            }
        }
    }
    out.push_str(&s[pos..]);
    (out, stripped)
}

/// Character limit of a statement generated from labels totalling `label_chars` characters.
pub fn max_chars(label_chars: usize) -> usize {
    400 + 8 * label_chars
}

fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}')
}

fn is_kana_or_kanji(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' | '\u{FF66}'..='\u{FF9D}'
        | '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c, '\u{00C0}'..='\u{024F}' if c != '\u{00D7}' && c != '\u{00F7}')
}

/// Whether at least half of the letters of `text` are in `lang`'s script (`None` = the language is not
/// checked). A text without letters fails.
pub fn has_script(lang: &str, text: &str) -> Option<bool> {
    let f: fn(char) -> bool = match lang {
        "ko" => is_hangul,
        "ja" => is_kana_or_kanji,
        "en" | "fr" | "de" | "es" | "it" | "pt" => is_latin,
        _ => return None,
    };
    let (mut letters, mut ours) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        ours += usize::from(f(c));
    }
    Some(letters > 0 && 2 * ours >= letters)
}

/// Frequent function words of each Latin-script language, chosen not to be words of English (for the
/// five others) or of the five others (for English): no `a`, `in`, `an`, `was`.
pub const FUNCTION_WORDS: [(&str, &[&str]); 6] = [
    (
        "en",
        &[
            "the", "is", "of", "and", "are", "this", "that", "with", "which", "has", "have",
            "from", "its", "by", "it", "for", "be", "been", "his", "her", "their", "known",
            "sentence",
        ],
    ),
    (
        "fr",
        &[
            "le", "la", "les", "est", "des", "du", "une", "et", "dans", "pour", "sur", "qui", "au",
            "aux", "par", "avec", "son", "sa", "ses", "été", "il", "elle",
        ],
    ),
    (
        "de",
        &[
            "der", "die", "das", "und", "ist", "ein", "eine", "von", "mit", "den", "dem", "des",
            "im", "zu", "auf", "für", "nicht", "sich", "auch", "wird", "wurde", "er", "sie",
        ],
    ),
    (
        "es",
        &[
            "el", "la", "los", "las", "es", "de", "del", "y", "en", "un", "una", "que", "por",
            "con", "para", "su", "se", "al", "fue",
        ],
    ),
    (
        "it",
        &[
            "il", "lo", "la", "gli", "le", "è", "di", "del", "della", "e", "un", "una", "che",
            "per", "con", "nel", "sono", "da", "è", "fu",
        ],
    ),
    (
        "pt",
        &[
            "o", "os", "as", "é", "de", "do", "da", "dos", "das", "e", "um", "uma", "que", "em",
            "no", "na", "com", "para", "por", "foi",
        ],
    ),
];

fn function_words(lang: &str, text: &str) -> usize {
    let Some((_, words)) = FUNCTION_WORDS.iter().find(|(l, _)| *l == lang) else {
        return 0;
    };
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .filter(|w| words.contains(&w.to_lowercase().as_str()))
        .count()
}

/// Whether a Latin-script `text` asked in `lang` reads as another language: English for fr, de, es, it,
/// pt; any of those five for en (`None` = the language is not checked).
pub fn is_wrong_language(lang: &str, text: &str) -> Option<bool> {
    let others: &[&str] = match lang {
        "en" => &["fr", "de", "es", "it", "pt"],
        "fr" | "de" | "es" | "it" | "pt" => &["en"],
        _ => return None,
    };
    let own = function_words(lang, text);
    let other = others
        .iter()
        .map(|o| function_words(o, text))
        .max()
        .unwrap_or(0);
    Some(other >= 3 && other > 2 * own)
}

/// Whether `text` echoes the prompt or the bracketed triple.
pub fn is_echo(text: &str, prompt: &str, labels: [&str; 3]) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let t = norm(text);
    let p = norm(prompt);
    if !p.is_empty() && t.contains(&p) {
        return true;
    }
    let labels: Vec<String> = labels.iter().map(|l| norm(l)).collect();
    let mut rest = t.as_str();
    while let Some(i) = rest.find('[') {
        let after = &rest[i + 1..];
        let span = match after.find(']') {
            Some(j) => &after[..j],
            None => after,
        };
        if labels
            .iter()
            .all(|l| !l.is_empty() && span.contains(l.as_str()))
        {
            return true;
        }
        rest = after;
    }
    false
}

/// Check one answer to a translation request.
pub fn check(lang: &str, answer: &str, prompt: &str, labels: [&str; 3]) -> Checked {
    let (stripped, think_stripped) = strip_think(answer);
    let text = stripped.trim().to_string();
    let label_chars: usize = labels.iter().map(|l| l.chars().count()).sum();
    let reason = if text.is_empty() {
        Some(Reason::Empty)
    } else if is_echo(&text, prompt, labels) {
        Some(Reason::Echo)
    } else if text.chars().count() > max_chars(label_chars) {
        Some(Reason::TooLong)
    } else if has_script(lang, &text) == Some(false) {
        Some(Reason::WrongScript)
    } else if is_wrong_language(lang, &text) == Some(true) {
        Some(Reason::WrongLanguage)
    } else {
        None
    };
    Checked {
        text,
        reason,
        think_stripped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "You are a French language writing expert. Generate one sentence for this input triple: [Paris, capital of, France]";
    const L: [&str; 3] = ["Paris", "capital of", "France"];

    #[test]
    fn a_sentence_using_the_labels_is_ok() {
        let c = check("fr", "Paris est la capital of France.", P, L);
        assert_eq!(c.reason, None);
        assert_eq!(c.text, "Paris est la capital of France.");
        assert!(!c.think_stripped);
    }

    #[test]
    fn each_reason_on_a_hand_made_case() {
        assert_eq!(check("fr", "   \n", P, L).reason, Some(Reason::Empty));
        assert_eq!(
            check("fr", "<think>hmm</think>  ", P, L).reason,
            Some(Reason::Empty)
        );
        assert_eq!(
            check("fr", &format!("Sure! {P}"), P, L).reason,
            Some(Reason::Echo)
        );
        assert_eq!(
            check("fr", "[Paris, capital of, France]", P, L).reason,
            Some(Reason::Echo)
        );
        assert_eq!(
            check("fr", "Triple: [ paris,  Capital of , france ] voilà", P, L).reason,
            Some(Reason::Echo)
        );
        // Brackets without the three labels are fine.
        assert_eq!(
            check("fr", "Paris [la ville] est la capital of France.", P, L).reason,
            None
        );
        let long = "Paris est belle. ".repeat(100);
        assert_eq!(check("fr", &long, P, L).reason, Some(Reason::TooLong));
        assert_eq!(
            check("ko", "Paris is the capital of France.", P, L).reason,
            Some(Reason::WrongScript)
        );
        assert_eq!(check("ko", "파리는 프랑스의 수도이다.", P, L).reason, None);
        assert_eq!(
            check("ja", "파리는 프랑스의 수도이다.", P, L).reason,
            Some(Reason::WrongScript)
        );
        assert_eq!(check("ja", "パリはフランスの首都です。", P, L).reason, None);
        assert_eq!(check("ja", "巴里", P, L).reason, None);
        assert_eq!(
            check("de", "パリはフランスの首都です。", P, L).reason,
            Some(Reason::WrongScript)
        );
        assert_eq!(check("pt", "É.", P, L).reason, None);
        assert_eq!(check("es", "¿?", P, L).reason, Some(Reason::WrongScript));
        // Unchecked languages pass on script.
        assert_eq!(check("zh", "Paris", P, L).reason, None);
    }

    #[test]
    fn answers_mostly_in_another_script_or_language_are_caught() {
        // Answers of SmolLM2-135M in the end-to-end run (scripts/e2e-local-model.sh).
        let cases = [
            ("ko", "The Korean language writing expert has crafted a sentence: 파리.", Some(Reason::WrongScript)),
            ("ja", "アニンゴーは、バカの美鮨を観るこうにないです。\nThis sentence is a Japanese language writing example.", Some(Reason::WrongScript)),
            ("ja", "The Japanese language is a unique blend, with the suffix \"く\".", Some(Reason::WrongScript)),
            ("fr", "Wickfiel Burde, a French language writer and author of the novel \"Sacred Love\" (1982), has been known for his work.", Some(Reason::WrongLanguage)),
            ("pt", "Isvel Eldorord, a Portuguese writer and author of the \"Sacred Love\" genre, is a prominent figure.", Some(Reason::WrongLanguage)),
            ("pt", "Apolinario dos Linhas de Iscola, a polícia para o Brasil.", None),
            ("es", "El cielo es un lado de la manera.", None),
            ("de", "Das ist eine neue Auswirkung, die Ihre Befunde öffnet wird. In this sentence, the German language is used.", None),
            ("en", "Paris est la capitale de la France et le siège du gouvernement.", Some(Reason::WrongLanguage)),
            ("en", "Paris is the capital of France.", None),
            // Mostly the labels: no function words either way.
            ("it", "Burel Renarpora capital of Sacred Love.", None),
            ("ko", "파리는 France의 수도이다.", None),
        ];
        for (lang, text, want) in cases {
            assert_eq!(check(lang, text, P, L).reason, want, "{lang}: {text}");
        }
        // Half the letters in the script is enough; a text of digits has no letters and fails.
        assert_eq!(has_script("ko", "파리 ab"), Some(true));
        assert_eq!(has_script("ko", "파리 abc"), Some(false));
        assert_eq!(has_script("fr", "1982"), Some(false));
        assert_eq!(is_wrong_language("zh", "the the the"), None);
    }

    #[test]
    fn think_blocks_are_stripped() {
        let c = check(
            "en",
            "<think>The user wants a sentence.</think>\nParis is the capital of France.",
            P,
            L,
        );
        assert_eq!(
            (c.text.as_str(), c.reason, c.think_stripped),
            ("Paris is the capital of France.", None, true)
        );
        let (t, s) = strip_think("a<THINK>x</Think>b<think>y</think>c");
        assert_eq!((t.as_str(), s), ("abc", true));
        let (t, s) = strip_think("answer <think>never closed");
        assert_eq!((t.as_str(), s), ("answer ", true));
        let (t, s) = strip_think("reasoning...</think>Final.");
        assert_eq!((t.as_str(), s), ("Final.", true));
        let (t, s) = strip_think("Ünïcödé <think>x</think>ok");
        assert_eq!((t.as_str(), s), ("Ünïcödé ok", true));
        assert_eq!(strip_think("plain"), ("plain".to_string(), false));
    }

    #[test]
    fn too_long_boundary() {
        let labels_len = 5 + 10 + 6;
        let limit = max_chars(labels_len);
        assert_eq!(limit, 400 + 8 * 21);
        let at = "a".repeat(limit);
        assert_eq!(check("en", &at, P, L).reason, None);
        let over = "a".repeat(limit + 1);
        assert_eq!(check("en", &over, P, L).reason, Some(Reason::TooLong));
    }
}
