"""Today's ``pyop2.codegen``: of its code generator, the loopy callables programs register
themselves (``rep2loopy``); op2-rs generates its loops' code in Rust (op2-codegen)."""
