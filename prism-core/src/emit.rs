//! Checked tree → PTX. (In progress.)
use crate::ast::Function;
use crate::check::Checked;
use crate::{CompiledKernel, Diagnostic};

/// Emits one PTX module per instance of the checked kernel.
pub fn emit_kernel(_k: &Checked, _deps: &[Function]) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    Ok(Vec::new())
}
