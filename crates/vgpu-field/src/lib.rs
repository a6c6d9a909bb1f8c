//! placeholder: replaced by the crate owner
