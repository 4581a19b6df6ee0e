//! The model: which line is what, ids, properties, label profiles; a pure function of the config.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// The model: which line is what, ids, properties, label profiles. Everything here is a pure function of the
// config, so any block can be generated independently.

/// The eight SWORD languages, and those a `mul` label stands in for.
pub(super) const SWORD_LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];
pub(super) const MUL_LANGS: [&str; 6] = ["en", "fr", "de", "es", "it", "pt"];

/// Other label languages, most frequent first.
pub(super) const OTHER_LANGS: [&str; 48] = [
    "nl", "ru", "pl", "sv", "zh", "ar", "uk", "ca", "cs", "fa", "fi", "he", "hu", "id", "nb", "ro",
    "sr", "tr", "vi", "el", "hi", "bn", "ta", "th", "da", "eo", "eu", "gl", "hr", "sk", "sl", "et",
    "lv", "lt", "ms", "af", "sq", "hy", "ka", "be", "bg", "mk", "cy", "ga", "la", "en-gb", "de-ch",
    "zh-hant",
];

pub(super) const SITES: [&str; 24] = [
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
pub(super) enum Role {
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
pub(super) struct PropDef {
    pub(super) id: Pid,
    pub(super) datatype: &'static str,
    pub(super) labelled: bool,
    pub(super) mul: bool,
    pub(super) transitive: bool,
    pub(super) symmetric_p31: bool,
    pub(super) symmetric_constraint: bool,
    pub(super) inverse: Vec<Pid>,
    pub(super) role: Role,
    /// Relative frequency as an item claim.
    pub(super) weight: f64,
    pub(super) name: String,
}

/// The rows of [`CURATED`], one a line: `(id, datatype, Role variant, weight, english name, flags)`.
macro_rules! curated {
    ($((
        $id:literal, $datatype:literal, $role:ident, $weight:literal, $name:literal, $flags:literal
    ),)*) => {
        &[$(($id, $datatype, Role::$role, $weight, $name, $flags)),*]
    };
}

/// Curated properties: (id, datatype, role, weight, english name, flags) with the real ids and datatypes.
/// Flags: t = transitive (P31 Q18647515), s = symmetric (P31 Q18647518), c = symmetric constraint (P2302
/// Q21510862), u = not labelled in all eight languages.
pub(super) const CURATED: &[(u64, &str, Role, f64, &str, &str)] = curated! {
    (31, "wikibase-item", Class, 0.0, "instance of", ""),
    (279, "wikibase-item", Hierarchy, 0.0, "subclass of", "t"),
    (361, "wikibase-item", Hierarchy, 0.0, "part of", "t"),
    (527, "wikibase-item", Generic, 0.0, "has part", "t"),
    (131, "wikibase-item", Hierarchy, 0.0, "located in the administrative territorial entity", "t"),
    (150, "wikibase-item", Generic, 0.0, "contains the administrative territorial entity", "t"),
    (171, "wikibase-item", Hierarchy, 0.0, "parent taxon", "t"),
    (17, "wikibase-item", Country, 0.0, "country", ""),
    (47, "wikibase-item", Generic, 0.0, "shares border with", "s"),
    (3373, "wikibase-item", Generic, 0.0, "sibling", "c"),
    (26, "wikibase-item", Generic, 0.0, "spouse", "s"),
    (40, "wikibase-item", Generic, 0.0, "child", ""),
    (22, "wikibase-item", Generic, 0.0, "father", ""),
    (27, "wikibase-item", Country, 0.0, "country of citizenship", ""),
    (106, "wikibase-item", Generic, 0.0, "occupation", ""),
    (19, "wikibase-item", Generic, 0.0, "place of birth", ""),
    (20, "wikibase-item", Generic, 0.0, "place of death", ""),
    (21, "wikibase-item", Class, 0.0, "sex or gender", ""),
    (69, "wikibase-item", Generic, 0.0, "educated at", ""),
    (108, "wikibase-item", Generic, 0.0, "employer", ""),
    (50, "wikibase-item", Generic, 0.0, "author", ""),
    (495, "wikibase-item", Country, 0.0, "country of origin", ""),
    (136, "wikibase-item", Class, 0.0, "genre", ""),
    (1412, "wikibase-item", Class, 0.0, "languages spoken, written or signed", ""),
    (921, "wikibase-item", Generic, 0.0, "main subject", ""),
    (1433, "wikibase-item", Generic, 1.0, "published in", "u"),
    (25, "wikibase-item", Generic, 0.0, "mother", ""),
    (36, "wikibase-item", Generic, 0.0, "capital", ""),
    (551, "wikibase-item", Generic, 0.0, "residence", ""),
    (1066, "wikibase-item", Generic, 0.0, "student of", ""),
    (802, "wikibase-item", Generic, 0.0, "student", ""),
    (937, "wikibase-item", Generic, 0.0, "work location", ""),
    (463, "wikibase-item", Generic, 0.0, "member of", ""),
    (161, "wikibase-item", Generic, 0.0, "cast member", ""),
    (840, "wikibase-item", Generic, 0.0, "narrative location", ""),
    (1376, "wikibase-item", Generic, 0.0, "capital of", ""),
    (530, "wikibase-item", Generic, 0.0, "diplomatic relation", "c"),
    (37, "wikibase-item", Generic, 0.0, "official language", ""),
    (30, "wikibase-item", Generic, 0.0, "continent", ""),
    (102, "wikibase-item", Generic, 0.0, "member of political party", ""),
    (166, "wikibase-item", Generic, 0.0, "award received", ""),
    (57, "wikibase-item", Generic, 0.0, "director", ""),
    (159, "wikibase-item", Generic, 0.0, "headquarters location", ""),
    (407, "wikibase-item", Generic, 0.0, "language of work or name", ""),
    (1696, "wikibase-property", Meta, 0.0, "inverse property", ""),
    (2302, "wikibase-item", Meta, 0.0, "property constraint", ""),
    (1659, "wikibase-property", Generic, 0.1, "related property", ""),
    (18, "commonsMedia", Generic, 2.0, "image", ""),
    (569, "time", Generic, 2.0, "date of birth", ""),
    (570, "time", Generic, 1.2, "date of death", ""),
    (571, "time", Generic, 1.0, "inception", ""),
    (577, "time", Generic, 2.0, "publication date", ""),
    (580, "time", Meta, 0.0, "start time", ""),
    (582, "time", Meta, 0.0, "end time", ""),
    (585, "time", Meta, 0.0, "point in time", ""),
    (625, "globe-coordinate", Generic, 2.0, "coordinate location", ""),
    (1082, "quantity", Generic, 1.5, "population", ""),
    (2048, "quantity", Generic, 0.8, "height", ""),
    (2046, "quantity", Generic, 0.8, "area", ""),
    (1476, "monolingualtext", Generic, 1.5, "title", ""),
    (1559, "monolingualtext", Generic, 0.8, "name in native language", ""),
    (373, "string", Generic, 1.5, "Commons category", ""),
    (1545, "string", Meta, 0.0, "series ordinal", ""),
    (214, "external-id", Generic, 2.5, "VIAF ID", ""),
    (227, "external-id", Generic, 1.5, "GND ID", ""),
    (213, "external-id", Generic, 1.0, "ISNI", ""),
    (646, "external-id", Generic, 2.5, "Freebase ID", ""),
    (356, "external-id", Generic, 2.0, "DOI", ""),
    (856, "url", Generic, 1.0, "official website", ""),
    (854, "url", Meta, 0.0, "reference URL", ""),
    (248, "wikibase-item", Meta, 0.0, "stated in", ""),
    (813, "time", Meta, 0.0, "retrieved", ""),
    (143, "wikibase-item", Meta, 0.0, "imported from Wikimedia project", ""),
    (2241, "wikibase-item", Meta, 0.0, "reason for deprecated rank", ""),
    (642, "wikibase-item", Meta, 0.0, "of", "u"),
    (5137, "wikibase-item", Meta, 0.0, "item for this sense", ""),
    (6254, "wikibase-lexeme", Generic, 0.1, "subject lexeme", "u"),
    (5972, "wikibase-sense", Meta, 0.0, "translation", "u"),
    (2534, "math", Generic, 0.2, "defining formula", "u"),
    (6604, "musical-notation", Generic, 0.05, "musical motif", "u"),
    (4179, "tabular-data", Generic, 0.1, "tabular population", "u"),
    (3896, "geo-shape", Generic, 0.1, "geoshape", "u"),
    (8204, "entity-schema", Generic, 0.05, "entity schema", "u"),
};

/// Inverse pairs (P1696 both ways).
pub(super) const INVERSES: &[(u64, u64)] = &[
    (361, 527),
    (131, 150),
    (40, 22),
    (40, 25),
    (36, 1376),
    (1066, 802),
];

/// Datatypes of generated properties with their shares.
pub(super) const GENERATED_TYPES: &[(&str, f64)] = &[
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
pub(super) enum Kind {
    /// Item with popularity rank r (0 = most popular; its id is `item_id(r)`).
    Item(u64),
    /// Property `props[j]`.
    Property(usize),
    /// Lexeme number l.
    Lexeme(u64),
}

/// How an entity's labels look, decided from a cheap hash so the oracle can ask about any entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LabelProfile {
    /// Labelled in all eight languages (after `mul` fallback).
    pub(super) labelled: bool,
    /// Uses a `mul` label.
    pub(super) mul: bool,
    /// Bit i set: SWORD_LANGS[i] has an explicit label.
    pub(super) explicit: u8,
    /// No labels at all.
    pub(super) none: bool,
    /// Written in the 2015 serialisation.
    pub(super) legacy: bool,
}

impl LabelProfile {
    /// Labelled only thanks to `mul`.
    pub(super) fn mul_only(&self) -> bool {
        self.labelled && self.mul && (self.explicit & 0x3f) != 0x3f
    }
}

/// Exponent of the within-class labelling curve (see `Model::item_profile`).
const LABEL_BETA: f64 = 0.3;

pub(super) struct Model {
    pub(super) cfg: Config,
    /// Sorted line positions of properties and lexemes (everything else is an item).
    pub(super) special: Vec<(u64, Kind)>,
    pub(super) props: Vec<PropDef>,
    /// Cumulative claim weights over `props` (for drawing claim properties).
    pub(super) cum_weight: Vec<f64>,
    pub(super) n_items: u64,
    /// The world behind the item lines.
    pub(super) world: World,
    /// Index in `props` of each curated property present.
    pub(super) curated_index: BTreeMap<u64, usize>,
    /// Constraints and P279 cycles for the falsity tiers (`falsity::Plan`).
    pub(super) falsity: super::falsity::Plan,
}

pub(super) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Model {
    pub(super) fn new(cfg: &Config) -> Model {
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
        // Page order: a real dump lists entities by page id, i.e. in creation order, and property ids are
        // given in creation order too, so along the dump the property lines stand among the item lines in
        // increasing id (P31 long before P10001). The positions drawn above are dealt to the properties in
        // that order (lexemes keep theirs; every item keeps its line, so only property lines move).
        let mut by_id: Vec<usize> = (0..props.len()).collect();
        by_id.sort_by_key(|&j| props[j].id);
        let mut next = by_id.into_iter();
        for s in special.iter_mut() {
            if let Kind::Property(_) = s.1 {
                if let Some(j) = next.next() {
                    s.1 = Kind::Property(j);
                }
            }
        }
        let mut acc = 0.0;
        let cum_weight = props
            .iter()
            .map(|p| {
                acc += p.weight;
                acc
            })
            .collect();
        let n_items = n - special.len() as u64;
        let curated_index = props
            .iter()
            .take(CURATED.len())
            .enumerate()
            .map(|(i, p)| (p.id.0, i))
            .collect();
        let mut m = Model {
            cfg: cfg.clone(),
            world: World::new(cfg.seed, n_items),
            curated_index,
            n_items,
            special,
            props,
            cum_weight,
            falsity: Default::default(),
        };
        m.falsity = super::falsity::Plan::new(&m);
        m
    }

    pub(super) fn properties(seed: u64, n: usize) -> Vec<PropDef> {
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
                inverse: INVERSES
                    .iter()
                    .filter_map(|&(a, b)| {
                        (a == id).then_some(Pid(b)).or((b == id).then_some(Pid(a)))
                    })
                    .collect(),
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
                // Only curated properties are transitive: the extract stage keeps the statements of unlabelled
                // subjects only for its seed of transitive properties, and the oracle's closure must match.
                transitive: false,
                symmetric_p31: datatype == "wikibase-item" && h2 % 59 == 1,
                symmetric_constraint: datatype == "wikibase-item" && h2 % 61 == 2,
                inverse: Vec::new(),
                role: Role::Generic,
                // Zipf-like: a few generated properties are common, most are rare.
                weight: 3.0 / rank.powf(0.9),
                name: format!("property {}", j + 1),
            });
        }
        out
    }

    /// Index in `props` of curated property `id`, if this dump has it.
    pub(super) fn prop_index(&self, id: u64) -> Option<usize> {
        self.curated_index.get(&id).copied()
    }

    pub(super) fn kind(&self, k: u64) -> Kind {
        match self.special.binary_search_by_key(&k, |s| s.0) {
            Ok(i) => self.special[i].1,
            Err(i) => Kind::Item(k - i as u64),
        }
    }

    pub(super) fn unit(&self, what: u64, id: u64, salt: u64) -> f64 {
        let h = splitmix(self.cfg.seed ^ splitmix(what ^ splitmix(id ^ salt)));
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Sparse item ids: one real id in each run of five numbers; popular items have small ids.
    pub(super) fn item_id(&self, r: u64) -> Qid {
        Qid(5 * r + 1 + splitmix(self.cfg.seed ^ r.wrapping_mul(0x2545_F491)) % 5)
    }

    /// An id that is not in the dump (in the same run of five as item r).
    pub(super) fn dangling_id(&self, r: u64, d: u64) -> Qid {
        let real_off = self.item_id(r).0 - 1 - 5 * r;
        Qid(5 * r + 1 + (real_off + 1 + d % 4) % 5)
    }

    pub(super) fn popularity(&self, r: u64) -> f64 {
        (-(r as f64) / (0.03 * self.n_items.max(1) as f64)).exp()
    }

    pub(super) fn item_profile(&self, r: u64) -> LabelProfile {
        // All eight labels go to the popular members of each class: the share is set per class (countries
        // nearly always, the long tail of humans rarely) and within a class falls as q^-0.6 with the item's
        // popularity quantile q (mean over the class: the class's share, before the 0.97 cap).
        let w = &self.world;
        let q = w.class_quantile(r as u32);
        let s = self.cfg.labelled_share * w.label_weight(r as u32);
        let p = (s * LABEL_BETA * q.powf(LABEL_BETA - 1.0)).min(0.97);
        self.profile(1, r, p, self.cfg.mul_share)
    }

    pub(super) fn prop_profile(&self, j: usize) -> LabelProfile {
        let d = &self.props[j];
        let mut p = self.profile(2, j as u64, if d.labelled { 1.0 } else { 0.0 }, 0.0);
        if d.mul && !p.legacy && p.labelled {
            p.mul = true;
            p.explicit &= 0b1100_0001; // en, ko, ja explicit; fr de es it pt from mul
        }
        p
    }

    pub(super) fn profile(
        &self,
        what: u64,
        id: u64,
        p_labelled: f64,
        mul_share: f64,
    ) -> LabelProfile {
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

    pub(super) fn labelled(&self, e: EntityIndex) -> bool {
        match e {
            EntityIndex::Item(r) => self.item_profile(r).labelled,
            EntityIndex::Prop(j) => self.prop_profile(j).labelled,
        }
    }

    pub(super) fn choose_prop(&self, rng: &mut ChaCha8Rng) -> usize {
        let total = *self.cum_weight.last().unwrap_or(&0.0);
        let x = rng.random::<f64>() * total;
        self.cum_weight
            .partition_point(|&c| c <= x)
            .min(self.props.len() - 1)
    }
}

impl LabelProfile {
    /// The keep rule, applied to the profile (checks the profile generator against the rule).
    pub(super) fn is_labelled_by_rule(&self) -> bool {
        if self.none {
            return false;
        }
        (0..8).all(|i| self.explicit & (1 << i) != 0 || (self.mul && i < 6))
    }
}

#[derive(Clone, Copy)]
pub(super) enum EntityIndex {
    Item(u64),
    Prop(usize),
}
