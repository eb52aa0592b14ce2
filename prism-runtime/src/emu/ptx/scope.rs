//! The decoder's state: a fresh parser and name declaration into the current scope.

use super::*;

impl Parser {
    pub(super) fn new() -> Parser {
        Parser {
            share_slots: true,
            funcs: Vec::new(),
            globals: Vec::new(),
            pending_relocs: Vec::new(),
            module_names: HashMap::new(),
            scopes: Vec::new(),
            scope_store: Vec::new(),
            scope_parent: Vec::new(),
            scope_gen: 0,
            snapshot: None,
            // Registers 0 and 1 are hidden per-thread state: the carry flag (`add.cc`) and the `alloca` stack.
            nregs: 2,
            reg_names: vec!["%cc.cf".into(), "%stack".into()],
            smem: 0,
            smem_fn: 0,
            smem_fn_max: 0,
            dyn_smem: None,
            local: 0,
            code: Vec::new(),
            pending: Vec::new(),
        }
    }
    pub(super) fn declare(&mut self, name: String, n: Name) {
        self.scope_gen += 1;
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name, n);
        } else {
            self.module_names.insert(name, n);
        }
    }
}
