//! Interpreter (placeholder while being written).
use super::*;
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shadow;
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_launch(_e: &mut Emulator, _m: &Module, _fi: usize, _g: [u32; 3], _b: [u32; 3], _d: u32, _p: Vec<u8>, _ga: Vec<u64>) -> Result<LaunchReport, EmuError> {
    Err(EmuError::BadLaunch("interpreter not yet available".into()))
}
