//! The text of a statement in other languages: the generation prompt the paper used (as a template with
//! `{language}`, `{subject}`, `{property}`, `{object}`), how one is rendered, and the `custom_id` that ties a
//! translation request to its (statement, language). Export writes the requests; translate and
//! import-translations read the answers back by the same ids and render the same prompts.

/// English name of a language code, as used in the generation prompt ("You are a French language ...").
pub fn language_name(code: &str) -> &str {
    match code {
        "en" => "English",
        "fr" => "French",
        "de" => "German",
        "es" => "Spanish",
        "it" => "Italian",
        "pt" => "Portuguese",
        "ko" => "Korean",
        "ja" => "Japanese",
        "zh" => "Chinese",
        "ru" => "Russian",
        "ar" => "Arabic",
        "nl" => "Dutch",
        other => other,
    }
}

/// `custom_id` of the translation request for a statement and a language: `<statement_id>:<lang>`.
pub fn custom_id(statement_id: &str, lang: &str) -> String {
    format!("{statement_id}:{lang}")
}

/// Split a `custom_id` back into (statement id, language).
pub fn split_custom_id(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once(':')
        .filter(|(s, l)| !s.is_empty() && !l.is_empty())
}

/// The paper's generation prompt, as a template.
pub const DEFAULT_TEMPLATE: &str = "You are a {language} language writing expert. Generate one sentence for this input triple: [{subject}, {property}, {object}]";

/// Render a template: `{language}` (the English name of `lang`), `{subject}`, `{property}`, `{object}`.
/// One pass, so a label that itself contains `{object}` is not substituted again; other braces stay.
pub fn render(template: &str, lang: &str, labels: [&str; 3]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let hit = [
            ("{language}", language_name(lang)),
            ("{subject}", labels[0]),
            ("{property}", labels[1]),
            ("{object}", labels[2]),
        ]
        .into_iter()
        .find(|(k, _)| tail.starts_with(k));
        match hit {
            Some((k, v)) => {
                out.push_str(v);
                rest = &tail[k.len()..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The paper's generation prompt.
pub fn prompt(language: &str, s: &str, p: &str, o: &str) -> String {
    format!(
        "You are a {language} language writing expert. Generate one sentence for this input triple: [{s}, {p}, {o}]"
    )
}
