//! Reading Wikidata dumps: format sniffing, decoders, line framing, parallel batches, the entity model.
pub mod gz;
