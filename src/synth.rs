//! Synthetic Wikidata dumps: `sword synth --entities N --out FILE [--seed S]`.
//!
//! Writes entity lines in the real dump layout (`[\n`, one entity per line joined by `,\n`, `\n]\n`), seeded and
//! deterministic at any thread count, as plain JSON, Wikimedia-layout multi-member gzip, bzip2 or zstd by the
//! extension of FILE (`.json`, `.json.gz`, `.json.bz2`, `.json.zst`).
//!
//! # What the lines look like
//! The shape is copied from the real fixtures (`dumps/*.json`, `entities/*.json`): items and properties with
//! labels, descriptions and aliases in many languages and scripts (some `mul` labels; a share of entities not
//! labelled in all of en fr de es it pt ko ja), claims with item, string, external-id, url, commonsMedia, time,
//! quantity, monolingualtext and globe-coordinate values, `somevalue`/`novalue` snaks, qualifiers and references
//! with hashes, statement GUIDs, ranks (some preferred, some deprecated, some duplicate (S, P, O) statements),
//! sitelinks with badges, heavy-tailed claim counts and line lengths, property entities with the metadata the
//! extract stage reads (datatype; P31 Q18647515 transitive / Q18647518 symmetric; P2302 Q21510862 symmetric
//! constraint; P1696 inverse), and a few lexeme lines. Item ids are sparse (one id in every five numbers, popular
//! items have small ids). Two serialisations are mixed, one per entity, so one dump exercises both: the current
//! one (raw UTF-8, item values with `id` and `numeric-id`, `lastrevid`/`modified`, `mul`) and the 2015 one
//! (PHP-style `\uXXXX` escapes with surrogate pairs and `\/`, item values with `numeric-id` only, empty maps
//! written as `[]`).
//!
//! # The oracle
//! [`generate`] returns a [`Truth`]: what the generator says it wrote under the default keep rule of the extract
//! stage (languages en fr de es it pt ko ja, `mul` standing in for en fr de es it pt), computed from the
//! generator's own model of each entity (never by parsing the output), so tests can check `extract` against it.
//!
//! # Speed
//! Lines are generated in blocks of `member_lines` entities, in parallel, each entity from its own
//! `ChaCha8Rng` seeded by (seed, entity index), and written in order; for `.json.gz` each block is compressed
//! in parallel as its own gzip member. A 2 GB dump takes a few minutes on two cores (see BENCHMARKS.md).

use crate::artifact::AtomicFile;
use crate::dump::gz;
use crate::error::{Error, IoContext, Result};
use crate::ids::{EntityId, Pid, Qid};
use crate::model::Rank;
use crate::progress::{self, Progress, Unit};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Generator settings. Every field has a default; `sword synth --config FILE` reads them from TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Number of entity lines (items + properties + lexemes). Typical: 20 000 for the embedded default,
    /// 1 000 000 for a ≈ 2 GB benchmark dump.
    pub entities: u64,
    /// Seed of every random choice; the same seed and config give the same bytes.
    pub seed: u64,
    /// Property entities among the lines; 0 = automatic (entities / 60, at least 60 (or entities / 3 when that
    /// is smaller), at most 6 000; real Wikidata has ≈ 12 000).
    pub properties: u64,
    /// Share of lexeme lines (skipped by extract). Typical 0.005.
    pub lexeme_share: f64,
    /// Mean number of claim properties per item (the count is heavy-tailed: most items have a few, some
    /// hundreds). Typical 7.
    pub mean_claims: f64,
    /// Share of items labelled in all eight SWORD languages (popular items more often). Real Wikidata: a few
    /// percent; the default is larger so that small dumps give enough triples. Typical 0.2.
    pub labelled_share: f64,
    /// Share of labelled items whose Latin-script labels come from a `mul` label. Typical 0.15.
    pub mul_share: f64,
    /// Share of entities written in the 2015 serialisation (escapes, `numeric-id` only, `[]` for empty maps).
    pub legacy_share: f64,
    /// Entity lines per parallel block, and per gzip member in `.json.gz` output. Typical 5 000.
    pub member_lines: usize,
    /// gzip level (0–9) for `.json.gz`. Typical 6 (gzip's default).
    pub gzip_level: u32,
    /// zstd level for `.json.zst`. Typical 3.
    pub zstd_level: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            entities: 20_000,
            seed: 42,
            properties: 0,
            lexeme_share: 0.005,
            mean_claims: 7.0,
            labelled_share: 0.2,
            mul_share: 0.15,
            legacy_share: 0.2,
            member_lines: 5_000,
            gzip_level: 6,
            zstd_level: 3,
        }
    }
}

/// The embedded default dump that `sword run` uses when no `--dump` is given: 20 000 entity lines (≈ 110 MB of
/// JSON, seed 42) of which ≈ 3 300 items and properties are labelled in all eight languages, giving ≈ 4 500 final
/// triples over a heavy-tailed graph of ≈ 2 400 items, 98 % of them in one connected component (popular objects
/// such as classes and countries are shared by many subjects), so every later stage has meaningful input and the
/// whole pipeline runs in well under a minute on two cores.
pub fn default_config() -> Config {
    Config::default()
}

/// Output format, chosen from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    /// `.json`: plain JSON.
    Json,
    /// `.json.gz`: Wikimedia-layout multi-member gzip (a member for `[\n`, one per block, one for `\n]\n`).
    Gzip,
    /// `.json.bz2`: one bzip2 stream.
    Bzip2,
    /// `.json.zst`: one zstd frame.
    Zstd,
}

impl Format {
    /// The format for a file name (`.json`, `.json.gz`, `.json.bz2`, `.json.zst`).
    pub fn from_path(path: &Path) -> Result<Format> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".json") {
            Ok(Format::Json)
        } else if name.ends_with(".json.gz") {
            Ok(Format::Gzip)
        } else if name.ends_with(".json.bz2") {
            Ok(Format::Bzip2)
        } else if name.ends_with(".json.zst") {
            Ok(Format::Zstd)
        } else {
            Err(Error::Config(format!(
                "{}: unknown output format; use .json, .json.gz, .json.bz2 or .json.zst",
                path.display()
            )))
        }
    }
}

/// Metadata the generator gave a property entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyTruth {
    /// Wikibase datatype written in the property line.
    pub datatype: String,
    /// Labelled in all eight languages (after `mul` fallback).
    pub labelled: bool,
    /// P31 has Q18647515.
    pub transitive: bool,
    /// P31 has Q18647518 or P2302 has Q21510862.
    pub symmetric: bool,
    /// P1696 values.
    pub inverse: Vec<Pid>,
}

/// What the generator wrote, under the default keep rule of the extract stage (languages en fr de es it pt ko
/// ja; a `mul` label counts for en fr de es it pt). Computed from the generator's model, not from the output.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    /// Entity lines written.
    pub entities: u64,
    /// Item lines.
    pub items: u64,
    /// Property lines.
    pub properties_written: u64,
    /// Lexeme lines.
    pub lexemes: u64,
    /// Items and properties labelled in all eight languages.
    pub labelled: BTreeSet<EntityId>,
    /// Labelled entities that are labelled only thanks to `mul` (some of en fr de es it pt come from `mul`).
    pub mul_only: u64,
    /// Final triples: subject item, property and object item all labelled, statement not deprecated; one entry
    /// per (S, P, O) with the best rank of its statements.
    pub triples: BTreeMap<(Qid, Pid, Qid), Rank>,
    /// Existence index: every item → item statement of any rank whose subject and object are labelled and
    /// whose property is labelled or is the inverse of a labelled property.
    pub statements: BTreeSet<(Qid, Pid, Qid)>,
    /// Every item → item statement of a transitive property, whatever the labels, with its best rank over all
    /// its statements (deprecated included).
    pub transitive: BTreeMap<(Qid, Pid, Qid), Rank>,
    /// Item → item statements written (any rank, any labels), duplicates counted.
    pub item_statements: u64,
    /// Property metadata of every property line.
    pub properties: BTreeMap<Pid, PropertyTruth>,
}

impl Truth {
    fn merge(&mut self, b: BlockTruth) {
        self.entities += b.entities;
        self.items += b.items;
        self.properties_written += b.properties;
        self.lexemes += b.lexemes;
        self.labelled.extend(b.labelled);
        self.mul_only += b.mul_only;
        self.item_statements += b.item_statements;
        for (k, r) in b.triples {
            let e = self.triples.entry(k).or_insert(r);
            *e = (*e).max(r);
        }
        self.statements.extend(b.statements);
        for (k, r) in b.transitive {
            let e = self.transitive.entry(k).or_insert(r);
            *e = (*e).max(r);
        }
    }
}

#[derive(Default)]
struct BlockTruth {
    entities: u64,
    items: u64,
    properties: u64,
    lexemes: u64,
    labelled: Vec<EntityId>,
    mul_only: u64,
    item_statements: u64,
    triples: Vec<((Qid, Pid, Qid), Rank)>,
    statements: Vec<(Qid, Pid, Qid)>,
    transitive: Vec<((Qid, Pid, Qid), Rank)>,
}

// ---------------------------------------------------------------------------------------------------------
// The model: which line is what, ids, properties, label profiles. Everything here is a pure function of the
// config, so any block can be generated independently.

/// The eight SWORD languages, and those a `mul` label stands in for.
const SWORD_LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];
const MUL_LANGS: [&str; 6] = ["en", "fr", "de", "es", "it", "pt"];

/// Other label languages, most frequent first.
const OTHER_LANGS: [&str; 48] = [
    "nl", "ru", "pl", "sv", "zh", "ar", "uk", "ca", "cs", "fa", "fi", "he", "hu", "id", "nb", "ro",
    "sr", "tr", "vi", "el", "hi", "bn", "ta", "th", "da", "eo", "eu", "gl", "hr", "sk", "sl", "et",
    "lv", "lt", "ms", "af", "sq", "hy", "ka", "be", "bg", "mk", "cy", "ga", "la", "en-gb", "de-ch",
    "zh-hant",
];

const SITES: [&str; 24] = [
    "enwiki",
    "dewiki",
    "frwiki",
    "eswiki",
    "itwiki",
    "ptwiki",
    "jawiki",
    "kowiki",
    "nlwiki",
    "ruwiki",
    "plwiki",
    "svwiki",
    "zhwiki",
    "arwiki",
    "ukwiki",
    "cawiki",
    "commonswiki",
    "enwikiquote",
    "dewikisource",
    "frwikivoyage",
    "fawiki",
    "fiwiki",
    "huwiki",
    "viwiki",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// P31: objects are a small set of classes.
    Class,
    /// Transitive hierarchy (P279, P131, P361, P171): objects have smaller indices (more general).
    Hierarchy,
    /// P17-like: objects among the first couple hundred items.
    Country,
    /// Any item, heavy-tailed popularity.
    Generic,
    /// Used only in qualifiers, references or property metadata; never chosen as an item claim.
    Meta,
}

#[derive(Clone, Debug)]
struct PropDef {
    id: Pid,
    datatype: &'static str,
    labelled: bool,
    mul: bool,
    transitive: bool,
    symmetric_p31: bool,
    symmetric_constraint: bool,
    inverse: Option<Pid>,
    role: Role,
    /// Relative frequency as an item claim.
    weight: f64,
    name: String,
}

/// Curated properties: (id, datatype, role, weight, english name, flags) with the real ids and datatypes.
/// Flags: t = transitive (P31 Q18647515), s = symmetric (P31 Q18647518), c = symmetric constraint (P2302
/// Q21510862), u = not labelled in all eight languages.
const CURATED: &[(u64, &str, Role, f64, &str, &str)] = &[
    (31, "wikibase-item", Role::Class, 0.0, "instance of", ""),
    (
        279,
        "wikibase-item",
        Role::Hierarchy,
        3.0,
        "subclass of",
        "t",
    ),
    (361, "wikibase-item", Role::Hierarchy, 2.0, "part of", "t"),
    (527, "wikibase-item", Role::Generic, 1.5, "has part", ""),
    (
        131,
        "wikibase-item",
        Role::Hierarchy,
        3.0,
        "located in the administrative territorial entity",
        "t",
    ),
    (
        150,
        "wikibase-item",
        Role::Generic,
        0.8,
        "contains the administrative territorial entity",
        "",
    ),
    (
        171,
        "wikibase-item",
        Role::Hierarchy,
        1.5,
        "parent taxon",
        "t",
    ),
    (17, "wikibase-item", Role::Country, 4.0, "country", ""),
    (
        47,
        "wikibase-item",
        Role::Generic,
        1.0,
        "shares border with",
        "s",
    ),
    (3373, "wikibase-item", Role::Generic, 0.6, "sibling", "c"),
    (26, "wikibase-item", Role::Generic, 0.6, "spouse", "s"),
    (40, "wikibase-item", Role::Generic, 0.8, "child", ""),
    (22, "wikibase-item", Role::Generic, 0.6, "father", ""),
    (
        27,
        "wikibase-item",
        Role::Country,
        2.0,
        "country of citizenship",
        "",
    ),
    (106, "wikibase-item", Role::Generic, 2.0, "occupation", ""),
    (
        19,
        "wikibase-item",
        Role::Generic,
        1.5,
        "place of birth",
        "",
    ),
    (
        20,
        "wikibase-item",
        Role::Generic,
        1.0,
        "place of death",
        "",
    ),
    (21, "wikibase-item", Role::Class, 2.0, "sex or gender", ""),
    (69, "wikibase-item", Role::Generic, 1.0, "educated at", ""),
    (108, "wikibase-item", Role::Generic, 0.8, "employer", ""),
    (50, "wikibase-item", Role::Generic, 1.5, "author", ""),
    (
        495,
        "wikibase-item",
        Role::Country,
        1.0,
        "country of origin",
        "",
    ),
    (136, "wikibase-item", Role::Class, 1.0, "genre", ""),
    (
        1412,
        "wikibase-item",
        Role::Class,
        0.7,
        "languages spoken, written or signed",
        "",
    ),
    (921, "wikibase-item", Role::Generic, 2.0, "main subject", ""),
    (
        1433,
        "wikibase-item",
        Role::Generic,
        1.0,
        "published in",
        "u",
    ),
    (
        1696,
        "wikibase-property",
        Role::Meta,
        0.0,
        "inverse property",
        "",
    ),
    (
        2302,
        "wikibase-item",
        Role::Meta,
        0.0,
        "property constraint",
        "",
    ),
    (
        1659,
        "wikibase-property",
        Role::Generic,
        0.1,
        "related property",
        "",
    ),
    (18, "commonsMedia", Role::Generic, 2.0, "image", ""),
    (569, "time", Role::Generic, 2.0, "date of birth", ""),
    (570, "time", Role::Generic, 1.2, "date of death", ""),
    (571, "time", Role::Generic, 1.0, "inception", ""),
    (577, "time", Role::Generic, 2.0, "publication date", ""),
    (580, "time", Role::Meta, 0.0, "start time", ""),
    (582, "time", Role::Meta, 0.0, "end time", ""),
    (585, "time", Role::Meta, 0.0, "point in time", ""),
    (
        625,
        "globe-coordinate",
        Role::Generic,
        2.0,
        "coordinate location",
        "",
    ),
    (1082, "quantity", Role::Generic, 1.5, "population", ""),
    (2048, "quantity", Role::Generic, 0.8, "height", ""),
    (2046, "quantity", Role::Generic, 0.8, "area", ""),
    (1476, "monolingualtext", Role::Generic, 1.5, "title", ""),
    (
        1559,
        "monolingualtext",
        Role::Generic,
        0.8,
        "name in native language",
        "",
    ),
    (373, "string", Role::Generic, 1.5, "Commons category", ""),
    (1545, "string", Role::Meta, 0.0, "series ordinal", ""),
    (214, "external-id", Role::Generic, 2.5, "VIAF ID", ""),
    (227, "external-id", Role::Generic, 1.5, "GND ID", ""),
    (213, "external-id", Role::Generic, 1.0, "ISNI", ""),
    (646, "external-id", Role::Generic, 2.5, "Freebase ID", ""),
    (356, "external-id", Role::Generic, 2.0, "DOI", ""),
    (856, "url", Role::Generic, 1.0, "official website", ""),
    (854, "url", Role::Meta, 0.0, "reference URL", ""),
    (248, "wikibase-item", Role::Meta, 0.0, "stated in", ""),
    (813, "time", Role::Meta, 0.0, "retrieved", ""),
    (
        143,
        "wikibase-item",
        Role::Meta,
        0.0,
        "imported from Wikimedia project",
        "",
    ),
    (
        2241,
        "wikibase-item",
        Role::Meta,
        0.0,
        "reason for deprecated rank",
        "",
    ),
    (642, "wikibase-item", Role::Meta, 0.0, "of", "u"),
    (
        5137,
        "wikibase-item",
        Role::Meta,
        0.0,
        "item for this sense",
        "",
    ),
    (
        6254,
        "wikibase-lexeme",
        Role::Generic,
        0.1,
        "subject lexeme",
        "u",
    ),
    (5972, "wikibase-sense", Role::Meta, 0.0, "translation", "u"),
    (2534, "math", Role::Generic, 0.2, "defining formula", "u"),
    (
        6604,
        "musical-notation",
        Role::Generic,
        0.05,
        "musical motif",
        "u",
    ),
    (
        4179,
        "tabular-data",
        Role::Generic,
        0.1,
        "tabular population",
        "u",
    ),
    (3896, "geo-shape", Role::Generic, 0.1, "geoshape", "u"),
    (
        8204,
        "entity-schema",
        Role::Generic,
        0.05,
        "entity schema",
        "u",
    ),
];

/// Inverse pairs (P1696 both ways).
const INVERSES: &[(u64, u64)] = &[(361, 527), (131, 150), (40, 22)];

/// Datatypes of generated properties with their shares.
const GENERATED_TYPES: &[(&str, f64)] = &[
    ("external-id", 0.45),
    ("wikibase-item", 0.28),
    ("string", 0.07),
    ("quantity", 0.06),
    ("time", 0.05),
    ("url", 0.03),
    ("commonsMedia", 0.02),
    ("monolingualtext", 0.02),
    ("globe-coordinate", 0.01),
    ("wikibase-property", 0.005),
    ("math", 0.005),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Item with popularity rank r (0 = most popular; its id is `item_id(r)`).
    Item(u64),
    /// Property `props[j]`.
    Property(usize),
    /// Lexeme number l.
    Lexeme(u64),
}

/// How an entity's labels look, decided from a cheap hash so the oracle can ask about any entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LabelProfile {
    /// Labelled in all eight languages (after `mul` fallback).
    labelled: bool,
    /// Uses a `mul` label.
    mul: bool,
    /// Bit i set: SWORD_LANGS[i] has an explicit label.
    explicit: u8,
    /// No labels at all.
    none: bool,
    /// Written in the 2015 serialisation.
    legacy: bool,
}

impl LabelProfile {
    /// Labelled only thanks to `mul`.
    fn mul_only(&self) -> bool {
        self.labelled && self.mul && (self.explicit & 0x3f) != 0x3f
    }
}

struct Model {
    cfg: Config,
    /// Sorted line positions of properties and lexemes (everything else is an item).
    special: Vec<(u64, Kind)>,
    props: Vec<PropDef>,
    /// Cumulative claim weights over `props` (for drawing claim properties).
    cum_weight: Vec<f64>,
    n_items: u64,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Model {
    fn new(cfg: &Config) -> Model {
        let n = cfg.entities;
        let n_props = if cfg.properties > 0 {
            cfg.properties.min(n)
        } else {
            (n / 60).clamp(60.min(n / 3), 6_000)
        }
        .max(u64::from(n >= 3) * (CURATED.len() as u64).min(n / 3));
        let n_lex = ((n as f64) * cfg.lexeme_share.clamp(0.0, 0.5)) as u64;
        let props = Model::properties(cfg.seed, n_props as usize);
        // Positions: a deterministic random sample of distinct line numbers for the special lines.
        let mut special = Vec::with_capacity((n_props + n_lex) as usize);
        let mut taken = BTreeSet::new();
        let mut rng = ChaCha8Rng::seed_from_u64(splitmix(cfg.seed ^ 0x5EC1A1));
        let mut kinds: Vec<Kind> = (0..n_props as usize).map(Kind::Property).collect();
        kinds.extend((0..n_lex).map(Kind::Lexeme));
        for kind in kinds {
            // Rejection sampling over line numbers; the special lines are a small share of all lines.
            loop {
                let pos = rng.random_range(0..n.max(1));
                if taken.insert(pos) {
                    special.push((pos, kind));
                    break;
                }
            }
        }
        special.sort_unstable_by_key(|s| s.0);
        let mut acc = 0.0;
        let cum_weight = props
            .iter()
            .map(|p| {
                acc += p.weight;
                acc
            })
            .collect();
        Model {
            cfg: cfg.clone(),
            n_items: n - special.len() as u64,
            special,
            props,
            cum_weight,
        }
    }

    fn properties(seed: u64, n: usize) -> Vec<PropDef> {
        let mut out = Vec::with_capacity(n);
        for (i, &(id, datatype, role, weight, name, flags)) in CURATED.iter().enumerate().take(n) {
            let h = splitmix(seed ^ 0xC0FFEE ^ i as u64);
            out.push(PropDef {
                id: Pid(id),
                datatype,
                labelled: !flags.contains('u'),
                mul: h.is_multiple_of(7),
                transitive: flags.contains('t'),
                symmetric_p31: flags.contains('s'),
                symmetric_constraint: flags.contains('c'),
                inverse: INVERSES.iter().find_map(|&(a, b)| {
                    (a == id).then_some(Pid(b)).or((b == id).then_some(Pid(a)))
                }),
                role,
                weight,
                name: name.to_string(),
            });
        }
        let mut next_id = 10_000u64;
        for j in out.len()..n {
            let h = splitmix(seed ^ 0xBEEF_0000 ^ j as u64);
            next_id += 1 + h % 13;
            let u = (h >> 11) as f64 / (1u64 << 53) as f64;
            let mut acc = 0.0;
            let mut datatype = GENERATED_TYPES[0].0;
            for &(t, share) in GENERATED_TYPES {
                acc += share;
                if u < acc {
                    datatype = t;
                    break;
                }
            }
            let rank = (j - CURATED.len().min(j)) as f64 + 1.0;
            let h2 = splitmix(h);
            out.push(PropDef {
                id: Pid(next_id),
                datatype,
                labelled: h2 % 100 < 80,
                mul: h2 % 100 >= 70 && h2 % 100 < 80,
                transitive: datatype == "wikibase-item" && h2.is_multiple_of(53),
                symmetric_p31: datatype == "wikibase-item" && h2 % 59 == 1,
                symmetric_constraint: datatype == "wikibase-item" && h2 % 61 == 2,
                inverse: None,
                role: Role::Generic,
                // Zipf-like: a few generated properties are common, most are rare.
                weight: 3.0 / rank.powf(0.9),
                name: format!("property {}", j + 1),
            });
        }
        out
    }

    fn kind(&self, k: u64) -> Kind {
        match self.special.binary_search_by_key(&k, |s| s.0) {
            Ok(i) => self.special[i].1,
            Err(i) => Kind::Item(k - i as u64),
        }
    }

    fn unit(&self, what: u64, id: u64, salt: u64) -> f64 {
        let h = splitmix(self.cfg.seed ^ splitmix(what ^ splitmix(id ^ salt)));
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sparse item ids: one real id in each run of five numbers; popular items have small ids.
    fn item_id(&self, r: u64) -> Qid {
        Qid(5 * r + 1 + splitmix(self.cfg.seed ^ r.wrapping_mul(0x2545_F491)) % 5)
    }

    /// An id that is not in the dump (in the same run of five as item r).
    fn dangling_id(&self, r: u64, d: u64) -> Qid {
        let real_off = self.item_id(r).0 - 1 - 5 * r;
        Qid(5 * r + 1 + (real_off + 1 + d % 4) % 5)
    }

    fn popularity(&self, r: u64) -> f64 {
        (-(r as f64) / (0.03 * self.n_items.max(1) as f64)).exp()
    }

    fn item_profile(&self, r: u64) -> LabelProfile {
        let p = (self.cfg.labelled_share * (0.7 + 2.0 * self.popularity(r))).min(0.97);
        self.profile(1, r, p, self.cfg.mul_share)
    }

    fn prop_profile(&self, j: usize) -> LabelProfile {
        let d = &self.props[j];
        let mut p = self.profile(2, j as u64, if d.labelled { 1.0 } else { 0.0 }, 0.0);
        if d.mul && !p.legacy && p.labelled {
            p.mul = true;
            p.explicit &= 0b1100_0001; // en, ko, ja explicit; fr de es it pt from mul
        }
        p
    }

    fn profile(&self, what: u64, id: u64, p_labelled: f64, mul_share: f64) -> LabelProfile {
        let u = |salt| self.unit(what, id, salt);
        let legacy = u(10) < self.cfg.legacy_share;
        let labelled = u(11) < p_labelled;
        let mut prof = LabelProfile {
            labelled,
            mul: false,
            explicit: 0xff,
            none: false,
            legacy,
        };
        if labelled {
            if !legacy && u(12) < mul_share {
                prof.mul = true;
                // ko and ja always explicit; each Latin-script language explicit with probability 0.3.
                let mut bits = 0b1100_0000u8;
                for i in 0..MUL_LANGS.len() as u64 {
                    if u(20 + i) < 0.3 {
                        bits |= 1 << i;
                    }
                }
                prof.explicit = bits;
            }
        } else {
            let v = u(13);
            if v < 0.03 {
                prof.none = true;
                prof.explicit = 0;
            } else if v < 0.18 && !legacy {
                // `mul` does not stand in for ko or ja: missing one of them is still unlabelled.
                prof.mul = true;
                prof.explicit = if u(14) < 0.5 {
                    0b0100_0000
                } else {
                    0b1000_0000
                };
                if u(15) < 0.5 {
                    prof.explicit |= 1;
                }
            } else {
                // A random non-empty set of the eight languages is missing, most often ko and/or ja.
                let mut missing = 0u8;
                for i in 0..8 {
                    let p = if i >= 6 { 0.55 } else { 0.25 };
                    if u(30 + i as u64) < p {
                        missing |= 1 << i;
                    }
                }
                if missing == 0 {
                    missing = 1 << (6 + (u(40) < 0.5) as u8);
                }
                prof.explicit = !missing;
            }
        }
        debug_assert_eq!(prof.labelled, prof.is_labelled_by_rule());
        prof
    }

    fn labelled(&self, e: EntityIndex) -> bool {
        match e {
            EntityIndex::Item(r) => self.item_profile(r).labelled,
            EntityIndex::Prop(j) => self.prop_profile(j).labelled,
        }
    }

    fn choose_prop(&self, rng: &mut ChaCha8Rng) -> usize {
        let total = *self.cum_weight.last().unwrap_or(&0.0);
        let x = rng.random::<f64>() * total;
        self.cum_weight
            .partition_point(|&c| c <= x)
            .min(self.props.len() - 1)
    }
}

impl LabelProfile {
    /// The keep rule, applied to the profile (checks the profile generator against the rule).
    fn is_labelled_by_rule(&self) -> bool {
        if self.none {
            return false;
        }
        (0..8).all(|i| self.explicit & (1 << i) != 0 || (self.mul && i < 6))
    }
}

#[derive(Clone, Copy)]
enum EntityIndex {
    Item(u64),
    Prop(usize),
}

// ---------------------------------------------------------------------------------------------------------
// JSON writing.

struct J<'a> {
    out: &'a mut Vec<u8>,
    /// 2015 serialisation: `\uXXXX` for non-ASCII, `\/` for slashes.
    legacy: bool,
}

impl J<'_> {
    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    fn str(&mut self, s: &str) {
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
    fn key(&mut self, k: &str) {
        self.str(k);
        self.out.push(b':');
    }
    fn num(&mut self, n: impl std::fmt::Display) {
        let _ = write!(self.out, "{n}");
    }
    /// `{}` or, in the 2015 serialisation, `[]`.
    fn empty_map(&mut self) {
        self.raw(if self.legacy { "[]" } else { "{}" });
    }
}

const SYLLABLES: [&str; 40] = [
    "ka", "lo", "ren", "mi", "sa", "to", "vel", "an", "dor", "is", "ma", "ri", "ton", "el", "bur",
    "ge", "nia", "por", "tu", "lin", "ca", "de", "ber", "ho", "st", "ay", "mont", "val", "ro",
    "sen", "fi", "ord", "ham", "qu", "ez", "ol", "wick", "ar", "un", "ville",
];

fn latin_name(rng: &mut ChaCha8Rng, words: usize) -> String {
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
fn script_name(lang: &str, base: &str, rng: &mut ChaCha8Rng) -> String {
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

fn hex(rng: &mut ChaCha8Rng, n: usize, upper: bool) -> String {
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

fn guid(rng: &mut ChaCha8Rng, entity: &str) -> String {
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
fn heavy(rng: &mut ChaCha8Rng, mean: f64, cap: u64) -> u64 {
    let alpha = 1.6;
    let xm = mean * (alpha - 1.0) / alpha;
    let u: f64 = 1.0 - rng.random::<f64>();
    ((xm / u.powf(1.0 / alpha)).round() as u64).clamp(1, cap)
}

// ---------------------------------------------------------------------------------------------------------
// Entity lines.

struct Gen<'m> {
    m: &'m Model,
    rng: ChaCha8Rng,
    legacy: bool,
}

/// A value snak's datavalue, written into `j` (without the surrounding snak).
impl<'m> Gen<'m> {
    fn item_value(&mut self, j: &mut J, q: Qid) {
        j.raw("{\"value\":{\"entity-type\":\"item\",\"numeric-id\":");
        j.num(q.0);
        if !self.legacy {
            j.raw(",\"id\":");
            j.str(&q.to_string());
        }
        j.raw("},\"type\":\"wikibase-entityid\"}");
    }

    fn time_value(&mut self, j: &mut J) {
        let year = self.rng.random_range(1000..2025);
        let precision = [9, 10, 11, 11, 11][self.rng.random_range(0..5)];
        let (mo, d) = if precision == 9 {
            (0, 0)
        } else {
            (self.rng.random_range(1..13), self.rng.random_range(1..29))
        };
        let time = format!("+{year:04}-{mo:02}-{d:02}T00:00:00Z");
        j.raw("{\"value\":{\"time\":");
        j.str(&time);
        j.raw(",\"timezone\":0,\"before\":0,\"after\":0,\"precision\":");
        j.num(precision);
        j.raw(",\"calendarmodel\":");
        j.str("http://www.wikidata.org/entity/Q1985727");
        j.raw("},\"type\":\"time\"}");
    }

    fn datavalue(&mut self, j: &mut J, datatype: &str, name: &str) {
        match datatype {
            "time" => self.time_value(j),
            "quantity" => {
                let amount = (10f64.powf(self.rng.random_range(0.0..7.0))).round() as u64;
                j.raw("{\"value\":{\"amount\":");
                j.str(&format!("+{amount}"));
                if self.rng.random_bool(0.2) {
                    j.raw(",\"upperBound\":");
                    j.str(&format!("+{}", amount + 1));
                    j.raw(",\"lowerBound\":");
                    j.str(&format!("+{}", amount.saturating_sub(1)));
                }
                j.raw(",\"unit\":");
                if self.rng.random_bool(0.5) {
                    j.str("1");
                } else {
                    j.str("http://www.wikidata.org/entity/Q11573");
                }
                j.raw("},\"type\":\"quantity\"}");
            }
            "globe-coordinate" => {
                let lat: f64 = self.rng.random_range(-90.0..90.0);
                let lon: f64 = self.rng.random_range(-180.0..180.0);
                j.raw("{\"value\":{\"latitude\":");
                j.num(format!("{lat:.6}"));
                j.raw(",\"longitude\":");
                j.num(format!("{lon:.6}"));
                j.raw(",\"altitude\":null,\"precision\":");
                j.raw(if self.rng.random_bool(0.1) {
                    "null"
                } else {
                    "0.0001"
                });
                j.raw(",\"globe\":");
                j.str("http://www.wikidata.org/entity/Q2");
                j.raw("},\"type\":\"globecoordinate\"}");
            }
            "monolingualtext" => {
                let lang = ["en", "fr", "de", "ja", "en-gb", "es"][self.rng.random_range(0..6)];
                let text = script_name(lang, name, &mut self.rng);
                j.raw("{\"value\":{\"text\":");
                j.str(&text);
                j.raw(",\"language\":");
                j.str(lang);
                j.raw("},\"type\":\"monolingualtext\"}");
            }
            "url" => {
                let s = format!(
                    "https://www.example.org/{}/{}",
                    name.replace(' ', "_").to_lowercase(),
                    self.rng.random_range(1..100_000)
                );
                j.raw("{\"value\":");
                j.str(&s);
                j.raw(",\"type\":\"string\"}");
            }
            "commonsMedia" => {
                j.raw("{\"value\":");
                j.str(&format!("{name} {}.jpg", self.rng.random_range(1..50)));
                j.raw(",\"type\":\"string\"}");
            }
            "wikibase-property" => {
                let p = self.m.props[self.rng.random_range(0..self.m.props.len())].id;
                j.raw("{\"value\":{\"entity-type\":\"property\",\"numeric-id\":");
                j.num(p.0);
                if !self.legacy {
                    j.raw(",\"id\":");
                    j.str(&p.to_string());
                }
                j.raw("},\"type\":\"wikibase-entityid\"}");
            }
            "wikibase-lexeme" => {
                let l = self.rng.random_range(1..500_000);
                j.raw("{\"value\":{\"entity-type\":\"lexeme\",\"numeric-id\":");
                j.num(l);
                j.raw(",\"id\":");
                j.str(&format!("L{l}"));
                j.raw("},\"type\":\"wikibase-entityid\"}");
            }
            "wikibase-sense" | "wikibase-form" => {
                let l = self.rng.random_range(1..500_000);
                let (et, s) = if datatype == "wikibase-sense" {
                    ("sense", "S")
                } else {
                    ("form", "F")
                };
                j.raw("{\"value\":{\"entity-type\":");
                j.str(et);
                j.raw(",\"id\":");
                j.str(&format!("L{l}-{s}{}", self.rng.random_range(1..4)));
                j.raw("},\"type\":\"wikibase-entityid\"}");
            }
            "math" => {
                j.raw("{\"value\":");
                j.str("E=mc^2 \\cdot \\frac{a}{b}");
                j.raw(",\"type\":\"string\"}");
            }
            "external-id" => {
                j.raw("{\"value\":");
                j.str(&self.rng.random_range(10_000u64..999_999_999).to_string());
                j.raw(",\"type\":\"string\"}");
            }
            _ => {
                // string and the rarer string-valued datatypes (musical-notation, tabular-data, geo-shape, ...).
                j.raw("{\"value\":");
                j.str(&format!("{name} {}", self.rng.random_range(1..1000)));
                j.raw(",\"type\":\"string\"}");
            }
        }
    }

    /// A qualifier or reference snak (with hash) of property `p` holding a generated value.
    fn aux_snak(&mut self, j: &mut J, p: &PropDef, name: &str, with_hash: bool) {
        j.raw("{\"snaktype\":\"value\",\"property\":");
        j.str(&p.id.to_string());
        if with_hash {
            j.raw(",\"hash\":");
            let h = hex(&mut self.rng, 40, false);
            j.str(&h);
        }
        j.raw(",\"datavalue\":");
        if p.datatype == "wikibase-item" {
            let r = self.object_index(Role::Generic, u64::MAX);
            let q = self.m.item_id(r);
            self.item_value(j, q);
        } else {
            self.datavalue(j, p.datatype, name);
        }
        j.raw(",\"datatype\":");
        j.str(p.datatype);
        j.raw("}");
    }

    /// The curated properties among `ids` that exist in this dump.
    fn curated(&self, ids: &[u64]) -> Vec<&'m PropDef> {
        let m: &'m Model = self.m;
        ids.iter()
            .filter_map(|&id| m.props.iter().take(CURATED.len()).find(|p| p.id.0 == id))
            .collect()
    }

    /// Snak groups `{"P580":[...],...}` followed by an order list under `order_key`.
    fn snak_groups(
        &mut self,
        j: &mut J,
        defs: &[&PropDef],
        name: &str,
        order_key: &str,
        hashes: bool,
    ) {
        j.raw("{");
        for (i, p) in defs.iter().enumerate() {
            if i > 0 {
                j.raw(",");
            }
            j.key(&p.id.to_string());
            j.raw("[");
            self.aux_snak(j, p, name, hashes);
            j.raw("]");
        }
        j.raw("},");
        j.key(order_key);
        j.raw("[");
        for (i, p) in defs.iter().enumerate() {
            if i > 0 {
                j.raw(",");
            }
            j.str(&p.id.to_string());
        }
        j.raw("]");
    }

    fn object_index(&mut self, role: Role, subject: u64) -> u64 {
        let n = self.m.n_items.max(1);
        let u: f64 = self.rng.random();
        let r = match role {
            Role::Class => ((n as f64).sqrt() * u * u) as u64,
            Role::Country => ((n.min(200)) as f64 * u * u) as u64,
            Role::Hierarchy if subject != u64::MAX && subject > 0 => {
                (subject as f64 * u.powf(1.5)) as u64
            }
            _ => (n as f64 * u * u * u) as u64,
        };
        r.min(n - 1)
    }
}

/// Generate one entity line at position `k` into `out` (no separator), recording the oracle in `t`.
fn entity_line(m: &Model, k: u64, out: &mut Vec<u8>, t: &mut BlockTruth) {
    let mut rng = ChaCha8Rng::seed_from_u64(splitmix(m.cfg.seed ^ splitmix(k ^ 0xE11)));
    t.entities += 1;
    match m.kind(k) {
        Kind::Item(r) => {
            t.items += 1;
            let prof = m.item_profile(r);
            let mut g = Gen {
                m,
                legacy: prof.legacy,
                rng: ChaCha8Rng::seed_from_u64(rng.random()),
            };
            item_line(&mut g, r, prof, out, t);
        }
        Kind::Property(jx) => {
            t.properties += 1;
            let prof = m.prop_profile(jx);
            let mut g = Gen {
                m,
                legacy: prof.legacy,
                rng,
            };
            property_line(&mut g, jx, prof, out, t);
        }
        Kind::Lexeme(l) => {
            t.lexemes += 1;
            let mut g = Gen {
                m,
                legacy: false,
                rng,
            };
            lexeme_line(&mut g, l, out);
        }
    }
}

fn terms(g: &mut Gen, j: &mut J, prof: LabelProfile, base: &str, popular: f64) {
    // Which languages get a label: the SWORD languages per the profile, `mul`, and a heavy-tailed number of
    // others (popular entities are labelled in many more languages).
    let extra = if prof.none {
        0
    } else {
        (heavy(&mut g.rng, 2.0 + 25.0 * popular, OTHER_LANGS.len() as u64) - 1) as usize
    };
    let mut langs: Vec<&str> = Vec::new();
    for (i, l) in SWORD_LANGS.iter().enumerate() {
        if prof.explicit & (1 << i) != 0 {
            langs.push(*l);
        }
    }
    langs.extend(OTHER_LANGS.iter().copied().take(extra));
    if prof.mul {
        langs.insert(0, "mul");
    }
    // Labels
    j.raw("\"labels\":");
    if langs.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in langs.iter().enumerate() {
            if i > 0 {
                j.raw(",");
            }
            let text = if *l == "mul" {
                base.to_string()
            } else {
                script_name(l, base, &mut g.rng)
            };
            j.key(l);
            j.raw("{\"language\":");
            j.str(l);
            j.raw(",\"value\":");
            j.str(&text);
            j.raw("}");
        }
        j.raw("}");
    }
    // Descriptions: a subset of the label languages.
    j.raw(",\"descriptions\":");
    let descs: Vec<&str> = langs
        .iter()
        .copied()
        .filter(|l| *l != "mul" && g.rng.random_bool(0.6))
        .collect();
    if descs.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in descs.iter().enumerate() {
            if i > 0 {
                j.raw(",");
            }
            let d = format!(
                "{} {}",
                ["entity", "village", "species", "person", "article", "work"]
                    [g.rng.random_range(0..6)],
                latin_name(&mut g.rng, 2).to_lowercase()
            );
            let d = script_name(l, &d, &mut g.rng);
            j.key(l);
            j.raw("{\"language\":");
            j.str(l);
            j.raw(",\"value\":");
            j.str(&d);
            j.raw("}");
        }
        j.raw("}");
    }
    // Aliases: a few languages with one to four aliases.
    j.raw(",\"aliases\":");
    let n_alias = if langs.is_empty() || g.rng.random_bool(0.6) {
        0
    } else {
        heavy(&mut g.rng, 1.5, langs.len() as u64) as usize
    };
    if n_alias == 0 {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, l) in langs.iter().take(n_alias).enumerate() {
            if i > 0 {
                j.raw(",");
            }
            j.key(l);
            j.raw("[");
            for a in 0..g.rng.random_range(1..5) {
                if a > 0 {
                    j.raw(",");
                }
                let name = latin_name(&mut g.rng, 2);
                let text = script_name(l, &name, &mut g.rng);
                j.raw("{\"language\":");
                j.str(l);
                j.raw(",\"value\":");
                j.str(&text);
                j.raw("}");
            }
            j.raw("]");
        }
        j.raw("}");
    }
}

fn rank(g: &mut Gen) -> Rank {
    let u: f64 = g.rng.random();
    if u < 0.03 {
        Rank::Deprecated
    } else if u < 0.08 {
        Rank::Preferred
    } else {
        Rank::Normal
    }
}

/// The statement envelope around a mainsnak already written by `mainsnak`.
fn statement(
    g: &mut Gen,
    j: &mut J,
    entity: &str,
    rank: Rank,
    name: &str,
    mainsnak: impl FnOnce(&mut Gen, &mut J),
) {
    j.raw("{\"mainsnak\":");
    mainsnak(g, j);
    j.raw(",\"type\":\"statement\"");
    let quals: Vec<u64> = if rank == Rank::Deprecated && g.rng.random_bool(0.5) {
        vec![2241]
    } else if g.rng.random_bool(0.15) {
        let pool = [580u64, 582, 585, 642, 1545];
        let n = g.rng.random_range(1..4);
        let start = g.rng.random_range(0..pool.len());
        (0..n).map(|i| pool[(start + i) % pool.len()]).collect()
    } else {
        Vec::new()
    };
    let quals = g.curated(&quals);
    if !quals.is_empty() {
        j.raw(",\"qualifiers\":");
        g.snak_groups(j, &quals, name, "qualifiers-order", true);
    }
    j.raw(",\"id\":");
    let id = guid(&mut g.rng, entity);
    j.str(&id);
    j.raw(",\"rank\":");
    j.str(rank.as_str());
    if g.rng.random_bool(0.4) {
        let n = heavy(&mut g.rng, 1.3, 4);
        let mut first = true;
        for _ in 0..n {
            let group: &[u64] = match g.rng.random_range(0..3) {
                0 => &[248, 813],
                1 => &[143],
                _ => &[854, 813],
            };
            let defs = g.curated(group);
            if defs.is_empty() {
                continue;
            }
            j.raw(if first { ",\"references\":[" } else { "," });
            first = false;
            j.raw("{\"hash\":");
            let h = hex(&mut g.rng, 40, false);
            j.str(&h);
            j.raw(",\"snaks\":");
            g.snak_groups(j, &defs, name, "snaks-order", false);
            j.raw("}");
        }
        if !first {
            j.raw("]");
        }
    }
    j.raw("}");
}

fn snak_head(j: &mut J, snaktype: &str, p: &PropDef) {
    j.raw("{\"snaktype\":");
    j.str(snaktype);
    j.raw(",\"property\":");
    j.str(&p.id.to_string());
}

fn item_line(g: &mut Gen, r: u64, prof: LabelProfile, out: &mut Vec<u8>, t: &mut BlockTruth) {
    let m = g.m;
    let q = m.item_id(r);
    let qs = q.to_string();
    let popular = m.popularity(r);
    let words = g.rng.random_range(1..4);
    let base = latin_name(&mut g.rng, words);
    let mut j = J {
        out,
        legacy: prof.legacy,
    };
    if prof.labelled {
        t.labelled.push(EntityId::Item(q));
        if prof.mul_only() {
            t.mul_only += 1;
        }
    }
    j.raw("{\"type\":\"item\",\"id\":");
    j.str(&qs);
    j.raw(",");
    terms(g, &mut j, prof, &base, popular);

    // Claims: P31 almost always, then a heavy-tailed number of other properties.
    let n_claims = heavy(&mut g.rng, m.cfg.mean_claims * (1.0 + 2.0 * popular), 400) as usize;
    let mut chosen: Vec<usize> = Vec::with_capacity(n_claims);
    if g.rng.random_bool(0.95) {
        chosen.push(0);
    }
    let mut tries = 0;
    while chosen.len() < n_claims && tries < 4 * n_claims + 8 {
        tries += 1;
        let p = m.choose_prop(&mut g.rng);
        if m.props[p].role != Role::Meta && m.props[p].weight > 0.0 && !chosen.contains(&p) {
            chosen.push(p);
        }
    }
    j.raw(",\"claims\":");
    if chosen.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (ci, &pi) in chosen.iter().enumerate() {
            let p = &m.props[pi];
            if ci > 0 {
                j.raw(",");
            }
            j.key(&p.id.to_string());
            j.raw("[");
            let n_st = if g.rng.random_bool(0.82) {
                1
            } else {
                heavy(&mut g.rng, 2.5, 30)
            };
            let mut objects: Vec<Qid> = Vec::new();
            for written in 0..n_st {
                let rk = rank(g);
                let st: f64 = g.rng.random();
                let snaktype = if st < 0.025 {
                    "somevalue"
                } else if st < 0.04 {
                    "novalue"
                } else {
                    "value"
                };
                // Item values: the object, possibly the same as an earlier statement (a duplicate (S, P, O)).
                let mut object: Option<(Qid, Option<u64>)> = None;
                if snaktype == "value" && p.datatype == "wikibase-item" {
                    if !objects.is_empty() && g.rng.random_bool(0.05) {
                        let o = objects[g.rng.random_range(0..objects.len())];
                        object = Some((o, m_index_of(m, o)));
                    } else if g.rng.random_bool(0.03) {
                        // An item that is not in the dump (deleted, or a later id).
                        let rr = g.object_index(Role::Generic, r);
                        let d = g.rng.random_range(0..4);
                        object = Some((m.dangling_id(rr, d), None));
                    } else {
                        let rr = g.object_index(p.role, r);
                        object = Some((m.item_id(rr), Some(rr)));
                    }
                }
                if written > 0 {
                    j.raw(",");
                }
                let name = &base;
                statement(g, &mut j, &qs, rk, name, |g, j| {
                    snak_head(j, snaktype, p);
                    if snaktype == "value" {
                        j.raw(",\"datavalue\":");
                        match object {
                            Some((o, _)) => g.item_value(j, o),
                            None => g.datavalue(j, p.datatype, name),
                        }
                    }
                    j.raw(",\"datatype\":");
                    j.str(p.datatype);
                    j.raw("}");
                });
                if let Some((o, oi)) = object {
                    objects.push(o);
                    record(m, t, q, prof.labelled, pi, o, oi, rk);
                }
            }
            j.raw("]");
        }
        j.raw("}");
    }
    // Sitelinks: most items have none; popular ones many.
    j.raw(",\"sitelinks\":");
    let n_sl = if g.rng.random_bool(0.5 * (1.0 - popular)) {
        0
    } else {
        heavy(&mut g.rng, 2.0 + 40.0 * popular, SITES.len() as u64) as usize
    };
    if n_sl == 0 {
        j.empty_map();
    } else {
        j.raw("{");
        for (i, site) in SITES.iter().take(n_sl).enumerate() {
            if i > 0 {
                j.raw(",");
            }
            j.key(site);
            j.raw("{\"site\":");
            j.str(site);
            j.raw(",\"title\":");
            let lang = site.trim_end_matches("wiki").trim_end_matches("wikiquote");
            let title = script_name(lang, &base, &mut g.rng);
            j.str(&title);
            j.raw(",\"badges\":[");
            if g.rng.random_bool(0.03) {
                j.str("Q17437796");
            }
            j.raw("]}");
        }
        j.raw("}");
    }
    if !prof.legacy {
        j.raw(",\"lastrevid\":");
        j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
        j.raw(",\"modified\":");
        let date = format!(
            "20{:02}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            g.rng.random_range(13..26),
            g.rng.random_range(1..13),
            g.rng.random_range(1..29),
            g.rng.random_range(0..24),
            g.rng.random_range(0..60),
            g.rng.random_range(0..60)
        );
        j.str(&date);
    }
    j.raw("}");
}

/// The popularity index of an item id that is in the dump (None for dangling ids).
fn m_index_of(m: &Model, q: Qid) -> Option<u64> {
    let r = (q.0 - 1) / 5;
    (r < m.n_items && m.item_id(r) == q).then_some(r)
}

/// Record an item → item statement in the oracle.
#[allow(clippy::too_many_arguments)]
fn record(
    m: &Model,
    t: &mut BlockTruth,
    s: Qid,
    s_labelled: bool,
    pi: usize,
    o: Qid,
    oi: Option<u64>,
    rk: Rank,
) {
    let p = &m.props[pi];
    t.item_statements += 1;
    let key = (s, p.id, o);
    if p.transitive {
        t.transitive.push((key, rk));
    }
    let o_labelled = oi.is_some_and(|r| m.labelled(EntityIndex::Item(r)));
    let p_labelled = m.labelled(EntityIndex::Prop(pi));
    // The existence index also keeps the statements of an unlabelled inverse partner of a labelled property.
    let partner_labelled = p.inverse.is_some_and(|q| {
        m.props
            .iter()
            .position(|d| d.id == q)
            .is_some_and(|j| m.labelled(EntityIndex::Prop(j)))
    });
    if s_labelled && o_labelled && (p_labelled || partner_labelled) {
        t.statements.push(key);
        if p_labelled && rk != Rank::Deprecated {
            t.triples.push((key, rk));
        }
    }
}

fn property_line(
    g: &mut Gen,
    jx: usize,
    prof: LabelProfile,
    out: &mut Vec<u8>,
    t: &mut BlockTruth,
) {
    let m = g.m;
    let p = m.props[jx].clone();
    let ps = p.id.to_string();
    if prof.labelled {
        t.labelled.push(EntityId::Property(p.id));
        if prof.mul_only() {
            t.mul_only += 1;
        }
    }
    let mut j = J {
        out,
        legacy: prof.legacy,
    };
    j.raw("{\"type\":\"property\",\"datatype\":");
    j.str(p.datatype);
    j.raw(",\"id\":");
    j.str(&ps);
    j.raw(",");
    let base = p.name.clone();
    terms(g, &mut j, prof, &base, 0.5);
    // Claims: P31 (transitive / symmetric / other classes), P1696 inverse, P2302 constraints, P1659.
    let mut groups: Vec<(u64, Vec<(Rank, Snak)>)> = Vec::new();
    let mut p31 = Vec::new();
    if p.transitive {
        p31.push((Rank::Normal, Snak::Item(Qid(18647515))));
    }
    if p.symmetric_p31 {
        p31.push((Rank::Normal, Snak::Item(Qid(18647518))));
    }
    if g.rng.random_bool(0.5) {
        let class = [18616576u64, 19847637, 18608871, 22964274][g.rng.random_range(0..4)];
        p31.push((Rank::Normal, Snak::Item(Qid(class))));
    }
    if !p31.is_empty() {
        groups.push((31, p31));
    }
    if let Some(inv) = p.inverse {
        groups.push((1696, vec![(Rank::Normal, Snak::Prop(inv))]));
    }
    let mut cons = Vec::new();
    if p.symmetric_constraint {
        cons.push((Rank::Normal, Snak::Item(Qid(21510862))));
    }
    for _ in 0..g.rng.random_range(0..4) {
        let c = [21503250u64, 21510865, 19474404, 21502404, 53869507][g.rng.random_range(0..5)];
        cons.push((Rank::Normal, Snak::Item(Qid(c))));
    }
    if !cons.is_empty() {
        groups.push((2302, cons));
    }
    if g.rng.random_bool(0.2) {
        let other = m.props[g.rng.random_range(0..m.props.len())].id;
        groups.push((1659, vec![(Rank::Normal, Snak::Prop(other))]));
    }
    j.raw(",\"claims\":");
    if groups.is_empty() {
        j.empty_map();
    } else {
        j.raw("{");
        for (gi, (pid, snaks)) in groups.iter().enumerate() {
            if gi > 0 {
                j.raw(",");
            }
            let def = PropDef {
                id: Pid(*pid),
                datatype: if matches!(snaks[0].1, Snak::Prop(_)) {
                    "wikibase-property"
                } else {
                    "wikibase-item"
                },
                ..p.clone()
            };
            j.key(&def.id.to_string());
            j.raw("[");
            for (si, (rk, snak)) in snaks.iter().enumerate() {
                if si > 0 {
                    j.raw(",");
                }
                let snak = *snak;
                statement(g, &mut j, &ps, *rk, &base, |g, j| {
                    snak_head(j, "value", &def);
                    j.raw(",\"datavalue\":");
                    match snak {
                        Snak::Item(q) => g.item_value(j, q),
                        Snak::Prop(pp) => {
                            j.raw("{\"value\":{\"entity-type\":\"property\",\"numeric-id\":");
                            j.num(pp.0);
                            if !g.legacy {
                                j.raw(",\"id\":");
                                j.str(&pp.to_string());
                            }
                            j.raw("},\"type\":\"wikibase-entityid\"}");
                        }
                    }
                    j.raw(",\"datatype\":");
                    j.str(def.datatype);
                    j.raw("}");
                });
            }
            j.raw("]");
        }
        j.raw("}");
    }
    if !prof.legacy {
        j.raw(",\"lastrevid\":");
        j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
    }
    j.raw("}");
}

#[derive(Clone, Copy)]
enum Snak {
    Item(Qid),
    Prop(Pid),
}

fn lexeme_line(g: &mut Gen, l: u64, out: &mut Vec<u8>) {
    let id = format!("L{}", 1 + l * 3 + g.rng.random_range(0..3));
    let lemma = latin_name(&mut g.rng, 1).to_lowercase();
    let mut j = J { out, legacy: false };
    j.raw("{\"type\":\"lexeme\",\"id\":");
    j.str(&id);
    j.raw(",\"lemmas\":{\"en\":{\"language\":\"en\",\"value\":");
    j.str(&lemma);
    j.raw("}},\"lexicalCategory\":\"Q1084\",\"language\":\"Q1860\",\"claims\":{");
    // A lexeme claim with an item value: not an item → item triple (the subject is a lexeme).
    let o = g.m.item_id(g.object_index(Role::Generic, u64::MAX));
    j.raw("\"P5137\":[");
    let def = PropDef {
        id: Pid(5137),
        datatype: "wikibase-item",
        labelled: true,
        mul: false,
        transitive: false,
        symmetric_p31: false,
        symmetric_constraint: false,
        inverse: None,
        role: Role::Meta,
        weight: 0.0,
        name: String::new(),
    };
    statement(g, &mut j, &id, Rank::Normal, &lemma, |g, j| {
        snak_head(j, "value", &def);
        j.raw(",\"datavalue\":");
        g.item_value(j, o);
        j.raw(",\"datatype\":\"wikibase-item\"}");
    });
    j.raw("]},\"forms\":[");
    for f in 1..=g.rng.random_range(1..4) {
        if f > 1 {
            j.raw(",");
        }
        j.raw("{\"id\":");
        j.str(&format!("{id}-F{f}"));
        j.raw(",\"representations\":{\"en\":{\"language\":\"en\",\"value\":");
        j.str(&format!(
            "{lemma}{}",
            ["", "s", "ed", "ing"][f as usize % 4]
        ));
        j.raw("}},\"grammaticalFeatures\":[\"Q110786\"],\"claims\":[]}");
    }
    j.raw("],\"senses\":[{\"id\":");
    j.str(&format!("{id}-S1"));
    j.raw(",\"glosses\":{\"en\":{\"language\":\"en\",\"value\":");
    j.str(&format!("meaning of {lemma}"));
    j.raw("}},\"claims\":[]}],\"lastrevid\":");
    j.num(g.rng.random_range(100_000_000u64..2_300_000_000));
    j.raw("}");
}

// ---------------------------------------------------------------------------------------------------------
// Blocks and output.

/// Lines `start..end`, joined by `,\n`, followed by `,\n` unless `end` is the last line.
fn block_bytes(m: &Model, start: u64, end: u64) -> (Vec<u8>, BlockTruth) {
    let mut out = Vec::with_capacity(((end - start) * 2048) as usize);
    let mut t = BlockTruth::default();
    for k in start..end {
        entity_line(m, k, &mut out, &mut t);
        if k + 1 < m.cfg.entities {
            out.extend_from_slice(b",\n");
        }
    }
    (out, t)
}

/// Entity lines of the synthetic generator totalling at least `bytes` (for benchmarks of other stages), one
/// line per element, without separators.
pub fn bench_lines(bytes: usize, seed: u64) -> Vec<Vec<u8>> {
    // A model large enough for `bytes` (lines average well above 500 bytes).
    let cfg = Config {
        entities: (bytes as u64 / 500).max(1_000),
        seed,
        lexeme_share: 0.0,
        ..Config::default()
    };
    let m = Model::new(&cfg);
    let mut lines = Vec::new();
    let mut total = 0;
    let mut t = BlockTruth::default();
    let mut k = 0;
    while total < bytes && k < cfg.entities {
        let mut l = Vec::new();
        entity_line(&m, k, &mut l, &mut t);
        total += l.len();
        lines.push(l);
        k += 1;
    }
    lines
}

/// Write a plain JSON dump for `cfg` to `w`; returns what was written.
pub fn generate<W: Write>(cfg: &Config, w: W) -> Result<Truth> {
    generate_as(cfg, w, Format::Json, Path::new("-"))
}

/// Write a dump in `format` to `w` (`path` names the destination in errors).
pub fn generate_as<W: Write>(cfg: &Config, w: W, format: Format, path: &Path) -> Result<Truth> {
    check(cfg)?;
    let m = Model::new(cfg);
    let mut truth = Truth::default();
    for p in &m.props {
        truth.properties.insert(
            p.id,
            PropertyTruth {
                datatype: p.datatype.to_string(),
                labelled: false,
                transitive: p.transitive,
                symmetric: p.symmetric_p31 || p.symmetric_constraint,
                inverse: p.inverse.into_iter().collect(),
            },
        );
    }
    for (j, p) in m.props.iter().enumerate() {
        let labelled = m.prop_profile(j).labelled;
        if let Some(pt) = truth.properties.get_mut(&p.id) {
            pt.labelled = labelled;
        }
    }
    let progress = Progress::new("synth", Some(cfg.entities), Unit::Items("entities"));
    let n = cfg.entities;
    let block = cfg.member_lines.max(1) as u64;
    let n_blocks = n.div_ceil(block);
    let per_round = (rayon::current_num_threads() as u64 * 2).max(2);
    let level = flate2::Compression::new(cfg.gzip_level.min(9));

    let mut sink = match format {
        Format::Json | Format::Gzip => Sink::Plain(w),
        Format::Bzip2 => Sink::Bz(bzip2::write::BzEncoder::new(w, bzip2::Compression::best())),
        Format::Zstd => Sink::Zst(zstd::stream::write::Encoder::new(w, cfg.zstd_level).at(path)?),
    };
    let head: &[u8] = b"[\n";
    let tail: &[u8] = if n == 0 { b"]\n" } else { b"\n]\n" };
    let write_part = |sink: &mut Sink<W>, bytes: &[u8]| -> Result<()> {
        if format == Format::Gzip {
            sink.write_all(&gz::compress_member(bytes, level)).at(path)
        } else {
            sink.write_all(bytes).at(path)
        }
    };
    write_part(&mut sink, head)?;
    let mut b0 = 0;
    while b0 < n_blocks {
        let b1 = (b0 + per_round).min(n_blocks);
        let parts: Vec<(Vec<u8>, BlockTruth)> = (b0..b1)
            .into_par_iter()
            .map(|b| {
                let (bytes, t) = block_bytes(&m, b * block, ((b + 1) * block).min(n));
                let bytes = if format == Format::Gzip {
                    gz::compress_member(&bytes, level)
                } else {
                    bytes
                };
                (bytes, t)
            })
            .collect();
        for (bytes, t) in parts {
            sink.write_all(&bytes).at(path)?;
            progress.inc(t.entities);
            truth.merge(t);
        }
        b0 = b1;
    }
    write_part(&mut sink, tail)?;
    sink.finish().at(path)?;
    progress.finish();
    Ok(truth)
}

/// The output stream of `generate_as`, finished explicitly so that compressor errors are not lost on drop.
enum Sink<W: Write> {
    Plain(W),
    Bz(bzip2::write::BzEncoder<W>),
    Zst(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Sink<W> {
    fn finish(self) -> std::io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            Sink::Bz(e) => e.finish()?,
            Sink::Zst(e) => e.finish()?,
        };
        w.flush()
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Bz(e) => e.write(buf),
            Sink::Zst(e) => e.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Bz(e) => e.write_all(buf),
            Sink::Zst(e) => e.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Bz(e) => e.flush(),
            Sink::Zst(e) => e.flush(),
        }
    }
}

fn check(cfg: &Config) -> Result<()> {
    let share = |name: &str, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "synth.{name} must be in [0, 1], got {v}"
            )))
        }
    };
    share("lexeme_share", cfg.lexeme_share)?;
    share("labelled_share", cfg.labelled_share)?;
    share("mul_share", cfg.mul_share)?;
    share("legacy_share", cfg.legacy_share)?;
    if !(cfg.mean_claims >= 1.0 && cfg.mean_claims <= 1000.0) {
        return Err(Error::Config(format!(
            "synth.mean_claims must be in [1, 1000], got {}",
            cfg.mean_claims
        )));
    }
    if cfg.gzip_level > 9 {
        return Err(Error::Config(format!(
            "synth.gzip_level must be 0–9, got {}",
            cfg.gzip_level
        )));
    }
    Ok(())
}

/// Write `path` atomically in the format its extension names; returns what was written.
pub fn write_file(cfg: &Config, path: &Path) -> Result<Truth> {
    let format = Format::from_path(path)?;
    let mut file = AtomicFile::create(path)?;
    let truth = generate_as(cfg, &mut file, format, path)?;
    file.commit()?;
    Ok(truth)
}

/// Command-line arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of entity lines (items, properties and a few lexemes). Default 20000.
    #[arg(long)]
    entities: Option<u64>,
    /// Output file; the extension picks the format: .json, .json.gz (Wikimedia multi-member layout),
    /// .json.bz2, .json.zst.
    #[arg(long)]
    out: PathBuf,
    /// Seed (default 42).
    #[arg(long)]
    seed: Option<u64>,
    /// Generator settings in TOML (fields of `synth::Config`); flags override.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Entity lines per gzip member (and per parallel block).
    #[arg(long)]
    member_lines: Option<usize>,
    /// Also write the oracle (what extract should find under the default rule) as JSON to this file.
    #[arg(long)]
    truth: Option<PathBuf>,
}

/// Entry point from the binary.
pub fn cli(args: Args) -> Result<()> {
    let mut cfg: Config = crate::config::load(args.config.as_deref())?;
    if let Some(n) = args.entities {
        cfg.entities = n;
    }
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    if let Some(m) = args.member_lines {
        cfg.member_lines = m;
    }
    let start = std::time::Instant::now();
    let truth = write_file(&cfg, &args.out)?;
    let size = std::fs::metadata(&args.out).at(&args.out)?.len();
    progress::log(format!(
        "synth: wrote {} ({} bytes) in {:.1} s: {} items, {} properties, {} lexemes; {} labelled entities, \
         {} final triples",
        args.out.display(),
        size,
        start.elapsed().as_secs_f64(),
        truth.items,
        truth.properties_written,
        truth.lexemes,
        truth.labelled.len(),
        truth.triples.len()
    ));
    if let Some(tp) = &args.truth {
        let doc = truth_json(&truth);
        crate::artifact::write_atomic(tp, |w| {
            serde_json::to_writer_pretty(&mut *w, &doc)?;
            w.write_all(b"\n")
        })?;
    }
    Ok(())
}

/// The oracle as JSON with Wikidata id strings (`{"labelled": ["P31", "Q5", ...], "triples": [["Q1", "P31",
/// "Q5", "normal"], ...], ...}`).
pub fn truth_json(t: &Truth) -> serde_json::Value {
    serde_json::json!({
        "entities": t.entities,
        "items": t.items,
        "properties": t.properties_written,
        "lexemes": t.lexemes,
        "mul_only": t.mul_only,
        "item_statements": t.item_statements,
        "labelled": t.labelled.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        "triples": t.triples.iter().map(|((s, p, o), r)| {
            [s.to_string(), p.to_string(), o.to_string(), r.as_str().to_string()]
        }).collect::<Vec<_>>(),
        "statements": t.statements.iter().map(|(s, p, o)| {
            [s.to_string(), p.to_string(), o.to_string()]
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(entities: u64, seed: u64) -> Config {
        Config {
            entities,
            seed,
            member_lines: 97,
            ..Config::default()
        }
    }

    fn gen(cfg: &Config) -> (Vec<u8>, Truth) {
        let mut v = Vec::new();
        let t = generate(cfg, &mut v).unwrap();
        (v, t)
    }

    #[test]
    fn layout_and_every_line_parses() {
        let (bytes, truth) = gen(&small(1500, 7));
        assert!(bytes.starts_with(b"[\n") && bytes.ends_with(b"\n]\n"));
        let body = &bytes[2..bytes.len() - 3];
        let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), 1500);
        let mut types = BTreeMap::new();
        for (i, l) in lines.iter().enumerate() {
            let l = if i + 1 < lines.len() {
                l.strip_suffix(b",")
                    .expect("comma after every line but the last")
            } else {
                l
            };
            let v: serde_json::Value = serde_json::from_slice(l)
                .unwrap_or_else(|e| panic!("line {i}: {e}: {}", String::from_utf8_lossy(l)));
            *types
                .entry(v["type"].as_str().unwrap().to_string())
                .or_insert(0u64) += 1;
        }
        assert_eq!(types["item"], truth.items);
        assert_eq!(types["property"], truth.properties_written);
        assert_eq!(types.get("lexeme").copied().unwrap_or(0), truth.lexemes);
        assert!(truth.lexemes > 0);
        assert_eq!(truth.entities, 1500);
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        let (a, ta) = gen(&small(600, 1));
        let (b, tb) = gen(&small(600, 1));
        let (c, _) = gen(&small(600, 2));
        assert!(a == b);
        assert_eq!(ta, tb);
        assert!(a != c);
    }

    #[test]
    fn thread_count_and_block_size_do_not_change_bytes() {
        let cfg = small(700, 3);
        let mut outs = Vec::new();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            outs.push(pool.install(|| gen(&cfg)));
        }
        let other_blocks = Config {
            member_lines: 1000,
            ..cfg.clone()
        };
        outs.push(gen(&other_blocks));
        assert!(outs[0].0 == outs[1].0 && outs[0].0 == outs[2].0);
        assert_eq!(outs[0].1, outs[2].1);
    }

    #[test]
    fn item_ids_are_sparse_and_increasing() {
        let m = Model::new(&small(5000, 9));
        let ids: Vec<u64> = (0..m.n_items).map(|r| m.item_id(r).0).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(*ids.last().unwrap() > 4 * m.n_items);
        for r in [0, 17, m.n_items - 1] {
            for d in 0..4 {
                let q = m.dangling_id(r, d);
                assert_ne!(q, m.item_id(r));
                assert_eq!(m_index_of(&m, q), None);
            }
            assert_eq!(m_index_of(&m, m.item_id(r)), Some(r));
        }
    }

    /// The label profiles obey the keep rule of the extract stage, checked on the parsed lines with an
    /// independent implementation of the rule.
    #[test]
    fn labelled_set_matches_the_rule_on_parsed_lines() {
        let (bytes, truth) = gen(&small(2000, 11));
        let body = &bytes[2..bytes.len() - 3];
        let mut labelled = BTreeSet::new();
        let mut mul_only = 0;
        for l in body.split(|&b| b == b'\n') {
            let l = l.strip_suffix(b",").unwrap_or(l);
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            let ty = v["type"].as_str().unwrap();
            if ty == "lexeme" {
                continue;
            }
            let labels = &v["labels"];
            let has = |lang: &str| {
                labels
                    .get(lang)
                    .and_then(|x| x["value"].as_str())
                    .is_some_and(|s| !s.is_empty())
            };
            let ok = SWORD_LANGS
                .iter()
                .all(|l| has(l) || (MUL_LANGS.contains(l) && has("mul")));
            if ok {
                labelled.insert(EntityId::parse(v["id"].as_str().unwrap()).unwrap());
                if !MUL_LANGS.iter().all(|l| has(l)) {
                    mul_only += 1;
                }
            }
        }
        assert_eq!(labelled, truth.labelled);
        assert_eq!(mul_only, truth.mul_only);
        assert!(truth.mul_only > 0);
        let share = truth.labelled.len() as f64 / truth.entities as f64;
        assert!(share > 0.1 && share < 0.9, "labelled share {share}");
    }

    /// Final triples recomputed from the parsed JSON with serde_json (independent of the generator's model).
    #[test]
    fn triples_match_the_parsed_lines() {
        let (bytes, truth) = gen(&small(3000, 5));
        let body = &bytes[2..bytes.len() - 3];
        let mut statements: Vec<(Qid, Pid, Qid, Rank)> = Vec::new();
        for l in body.split(|&b| b == b'\n') {
            let l = l.strip_suffix(b",").unwrap_or(l);
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            if v["type"] != "item" {
                continue;
            }
            let s = Qid::parse(v["id"].as_str().unwrap()).unwrap();
            let Some(claims) = v["claims"].as_object() else {
                continue;
            };
            for (p, sts) in claims {
                let p = Pid::parse(p).unwrap();
                for st in sts.as_array().unwrap() {
                    let ms = &st["mainsnak"];
                    if ms["snaktype"] != "value" {
                        continue;
                    }
                    let dv = &ms["datavalue"];
                    if dv["type"] != "wikibase-entityid" || dv["value"]["entity-type"] != "item" {
                        continue;
                    }
                    let o = Qid(dv["value"]["numeric-id"].as_u64().unwrap());
                    if let Some(id) = dv["value"]["id"].as_str() {
                        assert_eq!(Qid::parse(id), Some(o));
                    }
                    let rank = Rank::parse(st["rank"].as_str().unwrap()).unwrap();
                    statements.push((s, p, o, rank));
                }
            }
        }
        let lab = |e: EntityId| truth.labelled.contains(&e);
        let mut triples: BTreeMap<(Qid, Pid, Qid), Rank> = BTreeMap::new();
        let mut existence = BTreeSet::new();
        for &(s, p, o, r) in &statements {
            if lab(EntityId::Item(s)) && lab(EntityId::Property(p)) && lab(EntityId::Item(o)) {
                existence.insert((s, p, o));
                if r != Rank::Deprecated {
                    let e = triples.entry((s, p, o)).or_insert(r);
                    *e = (*e).max(r);
                }
            }
        }
        assert_eq!(statements.len() as u64, truth.item_statements);
        assert_eq!(triples, truth.triples);
        assert_eq!(existence, truth.statements);
        assert!(truth.triples.len() > 100, "{}", truth.triples.len());
        // Realism checks: deprecated, preferred and duplicate statements all occur.
        assert!(statements.iter().any(|s| s.3 == Rank::Deprecated));
        assert!(statements.iter().any(|s| s.3 == Rank::Preferred));
        let distinct: BTreeSet<_> = statements.iter().map(|s| (s.0, s.1, s.2)).collect();
        assert!(distinct.len() < statements.len());
    }

    #[test]
    fn property_metadata_is_written() {
        let (bytes, truth) = gen(&small(4000, 13));
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\"numeric-id\":18647515"));
        assert!(text.contains("\"numeric-id\":18647518"));
        assert!(text.contains("\"numeric-id\":21510862"));
        assert!(text.contains("\"P1696\":[{"));
        assert!(text.contains("\"snaktype\":\"somevalue\""));
        assert!(text.contains("\"snaktype\":\"novalue\""));
        assert!(text.contains("\"mul\":{\"language\":\"mul\""));
        assert!(text.contains("\"labels\":[]"));
        assert!(text.contains("\\ud842\\udf9f"), "a surrogate pair escape");
        assert!(text.contains("http:\\/\\/www.wikidata.org"));
        let p279 = &truth.properties[&Pid(279)];
        assert!(p279.transitive && p279.labelled);
        assert!(truth.properties[&Pid(47)].symmetric);
        assert!(truth.properties[&Pid(3373)].symmetric);
        assert_eq!(truth.properties[&Pid(361)].inverse, vec![Pid(527)]);
        assert!(!truth.transitive.is_empty());
    }

    #[test]
    fn format_from_extension() {
        assert_eq!(
            Format::from_path(Path::new("a.json")).unwrap(),
            Format::Json
        );
        assert_eq!(
            Format::from_path(Path::new("a.json.gz")).unwrap(),
            Format::Gzip
        );
        assert_eq!(
            Format::from_path(Path::new("a.JSON.BZ2")).unwrap(),
            Format::Bzip2
        );
        assert_eq!(
            Format::from_path(Path::new("a.json.zst")).unwrap(),
            Format::Zstd
        );
        assert!(Format::from_path(Path::new("a.txt")).is_err());
    }

    #[test]
    fn zero_entities_is_an_empty_dump() {
        let (bytes, truth) = gen(&small(0, 1));
        assert_eq!(bytes, b"[\n]\n");
        assert_eq!(truth.entities, 0);
    }
}
