//! The perspective checker. (In progress.)
use crate::ast::Function;
use crate::Diagnostic;

/// A function that passed every rule. The emitter only accepts these.
#[derive(Clone, Debug)]
pub struct Checked {
    pub function: Function,
}

/// Checks `f` against the rules of paper 000; `deps` are the device functions it may call.
pub fn check_function(f: &Function, _deps: &[Function]) -> Result<Checked, Vec<Diagnostic>> {
    Ok(Checked { function: f.clone() })
}
