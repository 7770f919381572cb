//! Integration tests of the packet engine, in one binary to keep link time low.
//!
//! Every test works on real temporary repositories with the real `git`, in a hermetic
//! environment (see `support::hermetic`).

mod confine;
mod support;
