//! The pgbench script language: lexer, meta commands, expressions, PRNG, built-in scripts.
