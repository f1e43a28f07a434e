//! The benches' shared helpers the soak uses (`benches/support/`), declared in a file of their
//! own so that every part of the soak reaches them without importing its main file.

#[path = "../support/cli.rs"]
pub(crate) mod cli;
#[path = "../support/http1.rs"]
pub(crate) mod http1;
#[path = "../support/out.rs"]
pub(crate) mod out;
#[path = "../support/stateless.rs"]
pub(crate) mod stateless;
