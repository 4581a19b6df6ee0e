//! The world behind the lines: every item's class, its home country, its place in the administrative
//! hierarchy, its family, its creator. A pure function of the config, built once before the lines, so that each
//! line can state its side of a relation (and only its side) without seeing the other line.
//!
//! Popularity rank `r` (0 = most popular) decides claim counts; labels in all eight languages follow the
//! item's popularity within its class and the class's weight (`World::label_weight`). The small "hub" classes
//! (class items, continents, countries, languages, occupations, genres, awards, parties) are placed at
//! popular ranks; the other classes fill the rest by their shares. Within a class, members are ordered by `r`,
//! and every draw of a member is heavy-tailed towards the popular ones.

use super::*;

/// Item classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Cls {
    Class = 0,
    Continent,
    Country,
    Region,
    City,
    Human,
    Org,
    University,
    Party,
    Work,
    Occupation,
    Taxon,
    Language,
    Award,
    Genre,
    Other,
}

pub(super) const N_CLS: usize = 16;

const ALL: [Cls; N_CLS] = [
    Cls::Class,
    Cls::Continent,
    Cls::Country,
    Cls::Region,
    Cls::City,
    Cls::Human,
    Cls::Org,
    Cls::University,
    Cls::Party,
    Cls::Work,
    Cls::Occupation,
    Cls::Taxon,
    Cls::Language,
    Cls::Award,
    Cls::Genre,
    Cls::Other,
];

/// English names of the class items that stand for each class (the first `N_CLS` class items).
pub(super) const CLASS_NAMES: [&str; N_CLS] = [
    "entity",
    "continent",
    "country",
    "region",
    "city",
    "human",
    "organization",
    "university",
    "political party",
    "creative work",
    "occupation",
    "taxon",
    "language",
    "award",
    "genre",
    "concept",
];

/// Shares of the non-hub classes among the items left after the hubs.
const SHARES: [(Cls, f64); 8] = [
    (Cls::Region, 0.015),
    (Cls::City, 0.12),
    (Cls::Human, 0.38),
    (Cls::Org, 0.06),
    (Cls::University, 0.025),
    (Cls::Work, 0.2),
    (Cls::Taxon, 0.12),
    (Cls::Other, 0.08),
];

const NONE: u32 = u32::MAX;

/// How unevenly places and people spread over countries: a home country is drawn at index
/// ⌊countries · u^COUNTRY_SKEW⌋: with 1.5 and 50 countries the most popular one holds about 7 % of them and
/// the top five about a fifth (2.5 concentrates more, but blurs the similarity analysis: see docs/synth.md).
const COUNTRY_SKEW: f64 = 1.5;

pub(super) struct World {
    /// Class of item r.
    pub(super) cls: Vec<Cls>,
    /// Members of each class, by popularity rank.
    pub(super) members: Vec<Vec<u32>>,
    /// Position of item r in its class list.
    pub(super) pos: Vec<u32>,
    /// Home country (an item rank) of item r, or NONE.
    pub(super) country: Vec<u32>,
    /// Parent of item r: the region of a city, the country of a region, the parent taxon, the parent class,
    /// the parent organisation, the creator of a work; NONE when it has none.
    pub(super) parent: Vec<u32>,
    /// Children of item r (the inverse of `parent`), by rank: regions of a country, cities of a region,
    /// member organisations, works of a creator, subclasses, child taxa.
    pub(super) children: Csr,
    /// Items of a class in a country: `local[(slot, country position)]`, by rank (slot: see `slot`).
    local: Vec<Vec<u32>>,
    /// Official language (item rank) of each country, by country position.
    pub(super) language: Vec<u32>,
    /// Continent (item rank) of each country, by country position.
    pub(super) continent: Vec<u32>,
    /// Home position of a human in its country's human list.
    pub(super) hpos: Vec<u32>,
    /// Teacher of a human (a more popular human of the same country), or NONE.
    pub(super) teacher: Vec<u32>,
    /// Students of a human (the inverse of `teacher`), by rank.
    pub(super) students: Csr,
    seed: u64,
}

/// A list per item in one flat array (compressed sparse rows): 4 bytes per item and 4 per listed member,
/// where a `Vec` per item cost 24 bytes per item plus an allocation for each non-empty list (the world of a
/// 112 M-line dump held ≈ 5 GB of list headers alone).
pub(super) struct Csr {
    /// `start[r]..start[r + 1]` is item r's range of `data`.
    start: Vec<u32>,
    data: Vec<u32>,
}

impl Csr {
    /// The inverse of `up` (item r is listed under `up[r]` unless it is NONE), each list in rank order.
    fn inverse(up: &[u32]) -> Csr {
        let n = up.len();
        let mut start = vec![0u32; n + 1];
        for &p in up {
            if p != NONE {
                start[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut data = vec![0u32; start[n] as usize];
        // start[p] is the cursor of list p while filling; afterwards it holds the old start[p + 1].
        for (r, &p) in up.iter().enumerate() {
            if p != NONE {
                data[start[p as usize] as usize] = r as u32;
                start[p as usize] += 1;
            }
        }
        for i in (1..=n).rev() {
            start[i] = start[i - 1];
        }
        start[0] = 0;
        Csr { start, data }
    }

    /// The list of item r.
    pub(super) fn of(&self, r: u32) -> &[u32] {
        let r = r as usize;
        &self.data[self.start[r] as usize..self.start[r + 1] as usize]
    }
}

/// Which classes have per-country lists.
fn slot(c: Cls) -> Option<usize> {
    match c {
        Cls::Region => Some(0),
        Cls::City => Some(1),
        Cls::Human => Some(2),
        Cls::Org => Some(3),
        Cls::University => Some(4),
        Cls::Party => Some(5),
        Cls::Award => Some(6),
        _ => None,
    }
}
const SLOTS: usize = 7;

fn unit_of(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Countries in a dump of `n` items.
fn n_countries(n: usize) -> usize {
    ((n as f64 / 400.0).clamp(8.0, 200.0) as usize).min(n / 40)
}

/// Index in 0..len, heavy-tailed towards 0.
pub(super) fn heavy_index(u: f64, len: usize, power: f64) -> usize {
    ((len as f64 * u.powf(power)) as usize).min(len.saturating_sub(1))
}

impl World {
    pub(super) fn new(seed: u64, n: u64) -> World {
        let n = n as usize;
        let h = |what: u64, i: u64| unit_of(splitmix(seed ^ splitmix(what ^ splitmix(i))));
        let hub = |c: Cls| -> usize {
            let x = n as f64;
            let k = match c {
                // The base classes, two administrative classes per country ("municipality of X",
                // "province of X", as Wikidata types places by country), then generic subclasses.
                Cls::Class => {
                    N_CLS as f64 + 2.0 * n_countries(n) as f64 + (x / 600.0).clamp(0.0, 400.0)
                }
                Cls::Continent => 6.0,
                Cls::Country => n_countries(n) as f64,
                Cls::Language => (x / 250.0).clamp(4.0, 400.0),
                Cls::Occupation => (x / 150.0).clamp(4.0, 3000.0),
                Cls::Genre => (x / 300.0).clamp(3.0, 1000.0),
                Cls::Award => (x / 200.0).clamp(3.0, 3000.0),
                Cls::Party => (x / 150.0).clamp(3.0, 3000.0),
                _ => 0.0,
            };
            // Tiny dumps: at most a fifth of the items are hubs.
            (k as usize).min(n / 40)
        };
        let mut cls: Vec<Option<Cls>> = vec![None; n];
        for c in ALL {
            for i in 0..hub(c) {
                let u = h(0x4B0B + c as u64, i as u64);
                let mut p = heavy_index(u, n, 3.0);
                while cls[p].is_some() {
                    p = (p + 1) % n;
                }
                cls[p] = Some(c);
            }
        }
        let total: f64 = SHARES.iter().map(|s| s.1).sum();
        let cls: Vec<Cls> = cls
            .into_iter()
            .enumerate()
            .map(|(r, c)| {
                c.unwrap_or_else(|| {
                    let mut u = h(0xC1A55, r as u64) * total;
                    for &(c, s) in &SHARES {
                        if u < s {
                            return c;
                        }
                        u -= s;
                    }
                    Cls::Other
                })
            })
            .collect();
        let mut sizes = [0usize; N_CLS];
        for &c in &cls {
            sizes[c as usize] += 1;
        }
        let mut members: Vec<Vec<u32>> = sizes.iter().map(|&k| Vec::with_capacity(k)).collect();
        let mut pos = vec![0u32; n];
        for (r, &c) in cls.iter().enumerate() {
            pos[r] = members[c as usize].len() as u32;
            members[c as usize].push(r as u32);
        }
        let countries = members[Cls::Country as usize].clone();
        let n_c = countries.len();
        let mut country = vec![NONE; n];
        let mut parent = vec![NONE; n];
        let pick = |list: &[u32], u: f64, power: f64| -> u32 {
            if list.is_empty() {
                NONE
            } else {
                list[heavy_index(u, list.len(), power)]
            }
        };
        // Countries, regions (in a country), then everything with a home country. Cities and the rest come
        // after regions so a city's country is its region's.
        for (r, &c) in cls.iter().enumerate() {
            let u = h(0xC0, r as u64);
            match c {
                Cls::Country => country[r] = r as u32,
                Cls::Region => {
                    country[r] = pick(&countries, u, COUNTRY_SKEW);
                    parent[r] = country[r];
                }
                _ => {}
            }
        }
        let mut local: Vec<Vec<u32>> = vec![Vec::new(); SLOTS * n_c.max(1)];
        let cpos = |country: u32, pos: &[u32]| pos[country as usize] as usize;
        for (r, &c) in cls.iter().enumerate() {
            if c == Cls::Region && country[r] != NONE {
                local[cpos(country[r], &pos)].push(r as u32);
            }
        }
        let regions = members[Cls::Region as usize].clone();
        let humans = members[Cls::Human as usize].clone();
        for (r, &c) in cls.iter().enumerate() {
            let u = h(0xC1, r as u64);
            match c {
                Cls::City => {
                    let reg = pick(&regions, u, 1.5);
                    if reg != NONE {
                        parent[r] = reg;
                        country[r] = country[reg as usize];
                    } else {
                        country[r] = pick(&countries, u, COUNTRY_SKEW);
                    }
                }
                Cls::Human | Cls::Org | Cls::University | Cls::Party | Cls::Award => {
                    country[r] = pick(&countries, u, COUNTRY_SKEW);
                }
                _ => {}
            }
            if let (Some(s), true) = (slot(c), country[r] != NONE && c != Cls::Region) {
                local[s * n_c + cpos(country[r], &pos)].push(r as u32);
            }
        }
        // Hierarchies within a class: a parent of smaller rank, heavy-tailed towards the top.
        for (r, &c) in cls.iter().enumerate() {
            let p = pos[r] as usize;
            let u = h(0xA1, r as u64);
            let list = &members[c as usize];
            match c {
                Cls::Class if p >= N_CLS && p < N_CLS + 2 * n_c => {
                    // A country's administrative class is a subclass of region or city.
                    let base = if (p - N_CLS).is_multiple_of(2) {
                        Cls::Region
                    } else {
                        Cls::City
                    };
                    parent[r] = list[base as usize];
                }
                // A generic subclass refines one of the base classes ("film" under creative work).
                Cls::Class if p >= N_CLS => parent[r] = list[heavy_index(u, N_CLS, 1.0)],
                Cls::Class if p > 0 => parent[r] = list[0],
                Cls::Taxon | Cls::Genre | Cls::Language | Cls::Occupation
                    if p > 0 && (c == Cls::Taxon || h(0xA2, r as u64) < 0.5) =>
                {
                    parent[r] = list[heavy_index(u, p, 2.0)];
                }
                Cls::Org if country[r] != NONE && h(0xA3, r as u64) < 0.3 => {
                    // A parent organisation in the same country, more popular than this one.
                    let l = &local[3 * n_c + cpos(country[r], &pos)];
                    let here = l.partition_point(|&x| (x as usize) < r);
                    if here > 0 {
                        parent[r] = l[heavy_index(u, here, 2.0)];
                    }
                }
                Cls::Work => {
                    // Works cluster around their creators: popular humans create many works.
                    let cr = pick(&humans, u, 2.5);
                    parent[r] = cr;
                    if cr != NONE {
                        country[r] = country[cr as usize];
                    }
                }
                _ => {}
            }
        }
        let children = Csr::inverse(&parent);
        let langs = &members[Cls::Language as usize];
        let conts = &members[Cls::Continent as usize];
        let language = (0..n_c)
            .map(|i| pick(langs, h(0x1A, i as u64), 1.5))
            .collect();
        let continent = (0..n_c)
            .map(|i| {
                if conts.is_empty() {
                    NONE
                } else {
                    conts[i * conts.len() / n_c.max(1)]
                }
            })
            .collect();
        let mut hpos = vec![NONE; n];
        for c in 0..n_c {
            for (i, &r) in local[2 * n_c + c].iter().enumerate() {
                hpos[r as usize] = i as u32;
            }
        }
        // Teachers: about a third of the humans studied under a more popular human of their country.
        let mut teacher = vec![NONE; n];
        for c in 0..n_c {
            let list = &local[2 * n_c + c];
            for (i, &r) in list.iter().enumerate() {
                if i > 0 && h(0x7E, u64::from(r)) < 0.35 {
                    teacher[r as usize] = list[heavy_index(h(0x7F, u64::from(r)), i, 2.0)];
                }
            }
        }
        // A teacher's students are of its country, so rank order over all items is the order of the lists.
        let students = Csr::inverse(&teacher);
        World {
            teacher,
            students,
            cls,
            members,
            pos,
            country,
            parent,
            children,
            local,
            language,
            continent,
            hpos,
            seed,
        }
    }

    /// The administrative class of country `country` for regions or cities ("province of X",
    /// "municipality of X"), when the dump has one.
    pub(super) fn admin_class(&self, c: Cls, country: u32) -> Option<u32> {
        let k = match c {
            Cls::Region => 0,
            Cls::City => 1,
            _ => return None,
        };
        if country == NONE {
            return None;
        }
        let i = N_CLS + 2 * self.pos[country as usize] as usize + k;
        self.members[Cls::Class as usize].get(i).copied()
    }

    /// The generic subclasses of base class `c` (class items that refine it, like "film" for creative work).
    pub(super) fn subclasses(&self, c: Cls) -> &[u32] {
        let first = (N_CLS + 2 * self.n_countries()) as u32;
        match self.class_item(c) {
            Some(ci) => {
                let kids = self.children.of(ci);
                // Children are by rank; the generic ones are those past the administrative classes.
                let k = kids.partition_point(|&x| self.pos[x as usize] < first);
                &kids[k..]
            }
            None => &[],
        }
    }

    /// Labelled-in-eight-languages weight of a class, relative to `labelled_share`: countries, continents,
    /// languages and class items nearly always carry all eight labels, the long tail of humans, works and
    /// taxa rarely.
    pub(super) fn label_weight(&self, r: u32) -> f64 {
        match self.cls[r as usize] {
            Cls::Country | Cls::Continent => 5.0,
            Cls::Class | Cls::Language => 4.0,
            Cls::Region => 4.0,
            Cls::Occupation => 3.0,
            Cls::Genre => 2.5,
            Cls::City => 3.0,
            Cls::Award | Cls::Party | Cls::University => 1.5,
            Cls::Org => 0.6,
            Cls::Human => 0.3,
            Cls::Other => 0.3,
            Cls::Work => 0.3,
            Cls::Taxon => 0.25,
        }
    }

    /// How much richer than average the statements of item r are: popular items carry more optional
    /// claims (a famous person has a residence, employers and memberships recorded, an obscure one rarely),
    /// up to 3× for the top of its class.
    pub(super) fn richness(&self, r: u32) -> f64 {
        1.0 + 2.0 * (-self.class_quantile(r) / 0.05).exp()
    }

    /// Popularity of item r within its class: (position + ½) / class size, in (0, 1]; small is popular.
    pub(super) fn class_quantile(&self, r: u32) -> f64 {
        let len = self.members[self.cls[r as usize] as usize].len().max(1);
        (self.pos[r as usize] as f64 + 0.5) / len as f64
    }

    /// Countries with diplomatic relations with country `r`: its neighbours in country order (up to four on
    /// each side) and the five most popular countries (which relate to every country).
    pub(super) fn diplomatic(&self, r: u32) -> Vec<u32> {
        let list = &self.members[Cls::Country as usize];
        let Some(i) = list.iter().position(|&x| x == r) else {
            return Vec::new();
        };
        let mut out: Vec<u32> = Vec::new();
        for d in 1..=4usize {
            if list.len() > d + 1 {
                out.push(list[(i + d) % list.len()]);
                out.push(list[(i + list.len() - d) % list.len()]);
            }
        }
        if i < 5 {
            out.extend_from_slice(list);
        } else {
            out.extend_from_slice(&list[..5.min(list.len())]);
        }
        out.sort_unstable();
        out.dedup();
        out.retain(|&x| x != r);
        out
    }

    pub(super) fn n_countries(&self) -> usize {
        self.members[Cls::Country as usize].len()
    }

    /// Members of class `c` in the home country `country` (an item rank), by rank.
    pub(super) fn local(&self, c: Cls, country: u32) -> &[u32] {
        match slot(c) {
            Some(s) if country != NONE => {
                &self.local[s * self.n_countries() + self.pos[country as usize] as usize]
            }
            _ => &[],
        }
    }

    /// A member of `c`, heavy-tailed, in `country` with probability `p_local` (when it has one).
    pub(super) fn draw(
        &self,
        rng: &mut ChaCha8Rng,
        c: Cls,
        country: u32,
        p_local: f64,
    ) -> Option<u32> {
        let local = rng.random_bool(p_local);
        let u: f64 = rng.random();
        let list = if local && !self.local(c, country).is_empty() {
            self.local(c, country)
        } else {
            &self.members[c as usize][..]
        };
        (!list.is_empty()).then(|| list[heavy_index(u, list.len(), 4.0)])
    }

    /// The class item standing for class `c` (the first N_CLS class items), if the dump has it.
    pub(super) fn class_item(&self, c: Cls) -> Option<u32> {
        self.members[Cls::Class as usize].get(c as usize).copied()
    }

    /// Whether `who` states its side of the two-sided relation `tag` with `other` (a border, a marriage, a
    /// region and its country, …). For each pair a hash decides: both sides state it (35 %), only the side
    /// with the smaller rank (35 %), or only the other (30 %); so `states(tag, a, b)` and `states(tag, b, a)`
    /// describe one pair consistently, and at least one of them is true.
    pub(super) fn states(&self, tag: u64, who: u32, other: u32) -> bool {
        let (x, y) = (who.min(other), who.max(other));
        let u = unit_of(splitmix(
            self.seed ^ splitmix(tag ^ splitmix(u64::from(x) << 32 | u64::from(y))),
        ));
        // u < 0.35: both sides; 0.35 ≤ u < 0.7: only the smaller rank; u ≥ 0.7: only the larger.
        if who < other {
            u < 0.7
        } else {
            !(0.35..0.7).contains(&u)
        }
    }

    /// The members of `others` with which `who` states the relation `tag` (see [`World::states`]).
    pub(super) fn stated_by(
        &self,
        tag: u64,
        who: u32,
        others: impl IntoIterator<Item = u32>,
    ) -> Vec<u32> {
        others
            .into_iter()
            .filter(|&x| self.states(tag, who, x))
            .collect()
    }

    fn pair_unit(&self, tag: u64, i: u64) -> f64 {
        unit_of(splitmix(self.seed ^ splitmix(tag ^ splitmix(i))))
    }

    /// Humans of the same country in blocks of six: in a family block, 0 and 1 are spouses and the parents
    /// of 2, 3 and 4 (siblings); elsewhere (0, 1), (2, 3), (4, 5) are sometimes spouses.
    fn block(&self, r: u32) -> Option<(&[u32], usize, bool)> {
        let c = self.country[r as usize];
        let i = self.hpos[r as usize];
        if c == NONE || i == NONE || self.cls[r as usize] != Cls::Human {
            return None;
        }
        let list = self.local(Cls::Human, c);
        let b = i as usize / 6;
        let blk = &list[6 * b..(6 * b + 6).min(list.len())];
        let family = blk.len() >= 3 && self.pair_unit(0xFA, u64::from(blk[0])) < 0.4;
        Some((blk, i as usize % 6, family))
    }

    pub(super) fn spouse(&self, r: u32) -> Option<u32> {
        let (blk, k, family) = self.block(r)?;
        let other = k ^ 1;
        if other >= blk.len() || (family && k >= 2) {
            return None;
        }
        (family || self.pair_unit(0x5B, u64::from(blk[k & !1])) < 0.3).then_some(blk[other])
    }

    /// (father, mother) of a human.
    pub(super) fn parents(&self, r: u32) -> Option<(u32, u32)> {
        let (blk, k, family) = self.block(r)?;
        (family && (2..5).contains(&k)).then(|| (blk[0], blk[1]))
    }

    pub(super) fn kids(&self, r: u32) -> &[u32] {
        match self.block(r) {
            Some((blk, k, true)) if k < 2 => &blk[2..blk.len().min(5)],
            _ => &[],
        }
    }

    pub(super) fn siblings(&self, r: u32) -> Vec<u32> {
        match self.block(r) {
            Some((blk, k, true)) if (2..5).contains(&k) => blk[2..blk.len().min(5)]
                .iter()
                .copied()
                .filter(|&x| x != r)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Bordering countries (neighbours in country order) or regions (neighbours in their country's list).
    pub(super) fn borders(&self, r: u32) -> Vec<u32> {
        let list: &[u32] = match self.cls[r as usize] {
            Cls::Country => &self.members[Cls::Country as usize],
            Cls::Region => self.local(Cls::Region, self.country[r as usize]),
            // Municipalities border the municipalities of their region.
            Cls::City if self.parent[r as usize] != NONE => {
                self.children.of(self.parent[r as usize])
            }
            _ => return Vec::new(),
        };
        let Some(i) = list.iter().position(|&x| x == r) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for d in [1usize, 2, 3] {
            if list.len() > d + 1 {
                out.push(list[(i + d) % list.len()]);
                out.push(list[(i + list.len() - d) % list.len()]);
            }
        }
        out.sort_unstable();
        out.dedup();
        out.retain(|&x| x != r);
        out
    }
}
