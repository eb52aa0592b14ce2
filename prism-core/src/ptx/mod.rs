//! One model of PTX for the whole project: the emitter builds it and prints it, the emulator parses PTX
//! text into it and decodes it into its execution form. PTX syntax is known here and nowhere else.
//!
//! * [`model`]: the types ([`Module`], [`Function`], [`Stmt`], [`Instruction`], [`Operand`], …);
//! * [`parse()`]: text → model (also every nvcc PTX the emulator accepts);
//! * `Display`: model → text, in one layout, such that `parse(&m.to_string()) == Ok(m)`.
//!
//! ```
//! use prism_core::ptx::{self, Operand};
//!
//! let m = ptx::parse(".version 8.0\n.target sm_90a\n.address_size 64\n\
//!     .visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<2>;\n\tmov.u32 %r1, 0x1f;\n\tret;\n}\n")?;
//! let ptx::Item::Func(k) = &m.items[3] else { panic!() };
//! let ptx::Stmt::Instr(mov) = &k.body.as_ref().unwrap()[1] else { panic!() };
//! assert_eq!(mov.operands[1], Operand::Int(31));
//! assert_eq!(ptx::parse(&m.to_string())?, m);
//! # Ok::<(), ptx::ParseError>(())
//! ```

mod lex;
pub mod model;
mod parse;
mod print;

pub use lex::parse_int;
pub use model::*;

/// Text that is not PTX the model can read: where (1-based line) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub message: String,
}

impl ParseError {
    fn new(line: u32, message: impl Into<String>) -> ParseError {
        ParseError {
            line,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole module.
pub fn parse(src: &str) -> Result<Module, ParseError> {
    parse::Parser::new(src).module()
}

/// Parses statements of a function body (instructions, labels, declarations, balanced blocks), as the
/// emitter and inline assembly write them.
pub fn parse_stmts(src: &str) -> Result<Vec<Stmt>, ParseError> {
    parse::Parser::new(src).stmts(false)
}

#[cfg(test)]
mod tests;
