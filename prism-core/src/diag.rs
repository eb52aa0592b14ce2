//! Diagnostics: errors carried as values, each naming the Prism rule it enforces and the span that broke it.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use std::fmt;

/// One compile error, in the style of rustc: what went wrong (`message`, which names the perspectives
/// involved), where (`span`), which rule of the paper (`rule`, e.g. `T-SPLIT`), and what to do (`help`).
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// The rule's name as the paper (or `docs/RULES.md`) spells it, e.g. `T-SPLIT`, `READ-UP`.
    pub rule: &'static str,
    pub message: String,
    pub span: Span,
    /// Secondary spans with a note each (e.g. where the variable was declared).
    pub notes: Vec<(Span, String)>,
    pub help: Option<String>,
    /// Set when the error is in the body of device function `name` called by the kernel being compiled
    /// (the check stage reports a callee's own rules to library callers); through the macros that
    /// function's own `#[prism_device]` reports it at its definition.
    pub in_callee: Option<Box<str>>,
}

impl Diagnostic {
    pub fn new(rule: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            rule,
            message: message.into(),
            span,
            notes: Vec::new(),
            help: None,
            in_callee: None,
        }
    }

    pub fn note(mut self, span: Span, note: impl Into<String>) -> Self {
        self.notes.push((span, note.into()));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The text of the primary error: `[RULE] message`, then `= help: ..`.
    pub fn text(&self) -> String {
        let mut s = format!("[{}] {}", self.rule, self.message);
        if let Some(h) = &self.help {
            s.push_str("\n  = help: ");
            s.push_str(h);
        }
        s
    }

    /// `compile_error!` invocations: the primary one at `span`, one per note at its own span.
    pub fn to_compile_error(&self) -> TokenStream {
        let text = self.text();
        let mut out = quote_spanned!(self.span=> ::core::compile_error! { #text });
        for (span, note) in &self.notes {
            let note = format!("[{}] note: {}", self.rule, note);
            out.extend(quote_spanned!(*span=> ::core::compile_error! { #note }));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for Diagnostic {}

/// All diagnostics as one token stream of `compile_error!`s.
pub fn to_compile_errors(diags: &[Diagnostic]) -> TokenStream {
    diags.iter().map(Diagnostic::to_compile_error).collect()
}
