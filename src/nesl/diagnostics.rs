//! What the parser, reference-exact, leaves unsaid, found by reading the reply's text
//! beside its result: what looked like a block but was not one ([`near_miss`]) and a block
//! whose end line is missing ([`missing_end`]), each with what the model should write
//! instead (docs/nesl.md).

pub mod missing_end;
pub mod near_miss;
