//! Owns the expression grammar of `\set`, `\if` and `\elif`: a precedence-climbing
//! parser reproducing pgbench's bison grammar (`exprparse.y`) — its precedence table,
//! associativity (comparisons are non-associative, `~` binds like the bitwise operators),
//! the rewrites it performs (`a > b` → `b < a`, `-e` → `0 - e`, `~e` → `-1 # e`, default
//! hash seeds), its syntax-time checks, and where its error caret points.

use crate::expr::{Arity, Expr, Func, NAMED_FUNCTIONS};
use crate::exprlex::{LexError, Scanner, Tok, Token};
use crate::names::VarName;
use crate::value::Value;

/// An expression syntax error: pgbench's message, optional parenthesised detail, and the
/// byte offset (into the script) the caret points at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", more.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())]
pub struct ExprError {
    /// e.g. `syntax error`, `unexpected function name`.
    pub message: String,
    /// e.g. the function name or offending character.
    pub more: Option<String>,
    /// Byte offset of the error in the parsed text.
    pub offset: usize,
}

impl From<LexError> for ExprError {
    fn from(e: LexError) -> ExprError {
        ExprError {
            message: e.message.to_string(),
            more: Some(e.more),
            offset: e.end.saturating_sub(1),
        }
    }
}

const P_OR: u8 = 1;
const P_AND: u8 = 2;
const P_NOT: u8 = 3;
const P_IS: u8 = 4;
const P_CMP: u8 = 5;
const P_BIT: u8 = 6;
const P_ADD: u8 = 7;
const P_MUL: u8 = 8;
const P_UNARY: u8 = 9;

/// Parses a standalone expression (the text after `\set name`), e.g. for tests and tools.
/// The expression ends at the first unescaped newline.
pub fn parse_expr(text: &str) -> Result<Expr, ExprError> {
    let mut sc = Scanner::new(text, 0);
    parse_expression(&mut sc)
}

/// Parses an expression from the scanner up to and including the end of the command.
/// On error the rest of the command is consumed (pgbench reports the last lexical error
/// of the line if there is one after the first error).
pub(crate) fn parse_expression(sc: &mut Scanner<'_>) -> Result<Expr, ExprError> {
    let mut p = Parser {
        sc,
        peeked: None,
        depth: 1,
    };
    let result = p.parse_expr(0).and_then(|e| {
        let t = p.next()?;
        if t.tok == Tok::Eol {
            Ok(e)
        } else {
            Err(syntax_error(&t))
        }
    });
    match result {
        Ok(e) => Ok(e),
        Err(err) => {
            let last_lex = if p.sc.at_end { None } else { p.sc.drain_expr() };
            Err(last_lex.map(ExprError::from).unwrap_or(err))
        }
    }
}

fn syntax_error(t: &Token) -> ExprError {
    ExprError {
        message: "syntax error".into(),
        more: None,
        offset: t.end.saturating_sub(1),
    }
}

struct Parser<'s, 'a> {
    sc: &'s mut Scanner<'a>,
    peeked: Option<Token>,
    /// How many states pgbench's bison parser would have on its stack: it gives up with
    /// "memory exhausted" at 10000, which also bounds this parser's recursion.
    depth: usize,
}

/// Stack kept free before recursing, and the size of each extra segment.
pub(crate) const RED_ZONE: usize = 64 * 1024;
pub(crate) const STACK_GROWTH: usize = 2 * 1024 * 1024;

/// Bison's default `YYMAXDEPTH`.
const MAX_DEPTH: usize = 10_000;

fn binary(tok: Tok) -> Option<(u8, Func, bool)> {
    // (precedence, function, swap operands)
    Some(match tok {
        Tok::Or => (P_OR, Func::Or, false),
        Tok::And => (P_AND, Func::And, false),
        Tok::Lt => (P_CMP, Func::Lt, false),
        Tok::Le => (P_CMP, Func::Le, false),
        Tok::Gt => (P_CMP, Func::Lt, true),
        Tok::Ge => (P_CMP, Func::Le, true),
        Tok::Eq => (P_CMP, Func::Eq, false),
        Tok::Ne => (P_CMP, Func::Ne, false),
        Tok::BitOr => (P_BIT, Func::BitOr, false),
        Tok::BitAnd => (P_BIT, Func::BitAnd, false),
        Tok::Hash => (P_BIT, Func::BitXor, false),
        Tok::LShift => (P_BIT, Func::LShift, false),
        Tok::RShift => (P_BIT, Func::RShift, false),
        Tok::Plus => (P_ADD, Func::Add, false),
        Tok::Minus => (P_ADD, Func::Sub, false),
        Tok::Star => (P_MUL, Func::Mul, false),
        Tok::Slash => (P_MUL, Func::Div, false),
        Tok::Percent => (P_MUL, Func::Mod, false),
        _ => return None,
    })
}

fn null_const() -> Expr {
    Expr::Const(Value::Null)
}

fn not(e: Expr) -> Expr {
    Expr::call(Func::Not, vec![e])
}

impl Parser<'_, '_> {
    fn peek(&mut self) -> Result<Token, ExprError> {
        if let Some(t) = self.peeked {
            return Ok(t);
        }
        let t = self.sc.next_token()?;
        self.peeked = Some(t);
        Ok(t)
    }

    /// Consumes (shifts) the next token.
    fn next(&mut self) -> Result<Token, ExprError> {
        let t = self.peek()?;
        self.peeked = None;
        if t.tok != Tok::Eol {
            self.depth += 1;
            if self.depth >= MAX_DEPTH {
                return Err(ExprError {
                    message: "memory exhausted".into(),
                    more: None,
                    offset: t.end.saturating_sub(1),
                });
            }
        }
        Ok(t)
    }

    fn expect(&mut self, tok: Tok) -> Result<Token, ExprError> {
        let t = self.next()?;
        if t.tok == tok {
            Ok(t)
        } else {
            Err(syntax_error(&t))
        }
    }

    fn parse_expr(&mut self, min: u8) -> Result<Expr, ExprError> {
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.parse_expr_inner(min))
    }

    fn parse_expr_inner(&mut self, min: u8) -> Result<Expr, ExprError> {
        let base = self.depth;
        let mut lhs = self.parse_prefix()?;
        // comparisons are %nonassoc: `a < b < c` is a syntax error
        let mut after_cmp = false;
        loop {
            let t = self.peek()?;
            match t.tok {
                Tok::IsNull | Tok::NotNull | Tok::Is if P_IS >= min => {
                    self.next()?;
                    lhs = self.postfix_is(t.tok, lhs)?;
                    after_cmp = false;
                    self.depth = base + 1;
                }
                tok => {
                    let Some((prec, func, swap)) = binary(tok) else {
                        break;
                    };
                    if prec < min {
                        break;
                    }
                    if prec == P_CMP && after_cmp {
                        return Err(syntax_error(&t));
                    }
                    self.next()?;
                    let rhs = self.parse_expr(prec + 1)?;
                    lhs = if swap {
                        Expr::call(func, vec![rhs, lhs])
                    } else {
                        Expr::call(func, vec![lhs, rhs])
                    };
                    after_cmp = prec == P_CMP;
                    self.depth = base + 1;
                }
            }
        }
        Ok(lhs)
    }

    fn postfix_is(&mut self, tok: Tok, lhs: Expr) -> Result<Expr, ExprError> {
        let is = |e: Expr, v: Value| Expr::call(Func::Is, vec![e, Expr::Const(v)]);
        match tok {
            Tok::IsNull => Ok(is(lhs, Value::Null)),
            Tok::NotNull => Ok(not(is(lhs, Value::Null))),
            _ => {
                let t = self.next()?;
                match t.tok {
                    Tok::Null => Ok(is(lhs, Value::Null)),
                    Tok::Bool(b) => Ok(is(lhs, Value::Bool(b))),
                    Tok::Not => {
                        let t2 = self.next()?;
                        match t2.tok {
                            Tok::Null => Ok(not(is(lhs, Value::Null))),
                            Tok::Bool(b) => Ok(not(is(lhs, Value::Bool(b)))),
                            _ => Err(syntax_error(&t2)),
                        }
                    }
                    _ => Err(syntax_error(&t)),
                }
            }
        }
    }

    /// One operand; leaves one more symbol on the (modelled) parser stack.
    fn parse_prefix(&mut self) -> Result<Expr, ExprError> {
        let base = self.depth;
        let e = self.parse_prefix_inner()?;
        self.depth = base + 1;
        Ok(e)
    }

    fn parse_prefix_inner(&mut self) -> Result<Expr, ExprError> {
        let t = self.next()?;
        match t.tok {
            Tok::LParen => {
                let e = self.parse_expr(0)?;
                self.expect(Tok::RParen)?;
                Ok(e)
            }
            Tok::Plus => self.parse_expr(P_UNARY),
            Tok::Minus => {
                if self.peek()?.tok == Tok::MaxIntPlusOne {
                    self.next()?;
                    return Ok(Expr::Const(Value::Int(i64::MIN)));
                }
                let e = self.parse_expr(P_UNARY)?;
                // A negative number is `0 - n` for pgbench; computed here once when that
                // cannot fail (no overflow) instead of on every evaluation. Same value.
                match e {
                    Expr::Const(Value::Int(n)) if n != i64::MIN => Ok(Expr::Const(Value::Int(-n))),
                    Expr::Const(Value::Double(d)) => Ok(Expr::Const(Value::Double(0.0 - d))),
                    e => Ok(Expr::call(Func::Sub, vec![Expr::Const(Value::Int(0)), e])),
                }
            }
            Tok::Tilde => {
                let e = self.parse_expr(P_BIT + 1)?;
                Ok(Expr::call(
                    Func::BitXor,
                    vec![Expr::Const(Value::Int(-1)), e],
                ))
            }
            Tok::Not => Ok(not(self.parse_expr(P_NOT)?)),
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::Null => Ok(null_const()),
            Tok::Bool(b) => Ok(Expr::Const(Value::Bool(b))),
            Tok::Var => Ok(Expr::Var(VarName::new(&self.sc.src[t.start..t.end]))),
            Tok::Ident => self.function(t),
            Tok::Case => self.case(),
            _ => Err(syntax_error(&t)),
        }
    }

    fn function(&mut self, name_tok: Token) -> Result<Expr, ExprError> {
        let name = &self.sc.src[name_tok.start..name_tok.end];
        let Some(&(canon, func, arity)) = NAMED_FUNCTIONS
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        else {
            return Err(ExprError {
                message: "unexpected function name".into(),
                more: Some(name.to_string()),
                offset: name_tok.end - 1,
            });
        };
        self.expect(Tok::LParen)?;
        let mut args = Vec::new();
        let close = if self.peek()?.tok == Tok::RParen {
            self.next()?
        } else {
            let elist_depth = self.depth + 1;
            loop {
                args.push(self.parse_expr(0)?);
                self.depth = elist_depth;
                let t = self.next()?;
                match t.tok {
                    Tok::Comma => {}
                    Tok::RParen => break t,
                    _ => return Err(syntax_error(&t)),
                }
            }
        };
        let n = args.len();
        let arity_error = |message: &str| ExprError {
            message: message.into(),
            more: Some(canon.to_string()),
            offset: close.end - 1,
        };
        let default_seed = || Expr::Var(VarName::new("default_seed"));
        match arity {
            Arity::Exactly(k) if k != n => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::AtLeastOne if n == 0 => {
                return Err(arity_error("at least one argument expected"))
            }
            Arity::Hash if !(1..=2).contains(&n) => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::Permute if !(2..=3).contains(&n) => {
                return Err(arity_error("unexpected number of arguments"))
            }
            Arity::Hash if n == 1 => args.push(default_seed()),
            Arity::Permute if n == 2 => args.push(default_seed()),
            _ => {}
        }
        Ok(Expr::call(func, args))
    }

    fn case(&mut self) -> Result<Expr, ExprError> {
        let mut args = Vec::new();
        let list_depth = self.depth + 1;
        self.expect(Tok::When)?;
        loop {
            args.push(self.parse_expr(0)?);
            self.expect(Tok::Then)?;
            args.push(self.parse_expr(0)?);
            // `… WHEN e THEN e` reduces to one when_then_list
            self.depth = list_depth;
            let t = self.next()?;
            match t.tok {
                Tok::When => {}
                Tok::Else => {
                    args.push(self.parse_expr(0)?);
                    self.expect(Tok::End)?;
                    break;
                }
                Tok::End => {
                    args.push(null_const());
                    break;
                }
                _ => return Err(syntax_error(&t)),
            }
        }
        Ok(Expr::call(Func::Case, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse_expr(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }
    fn i(v: i64) -> Expr {
        Expr::Const(Value::Int(v))
    }
    fn c(f: Func, a: Vec<Expr>) -> Expr {
        Expr::call(f, a)
    }

    #[test]
    fn precedence_and_rewrites() {
        assert_eq!(
            p("1 + 2 * 3"),
            c(Func::Add, vec![i(1), c(Func::Mul, vec![i(2), i(3)])])
        );
        assert_eq!(p("2 > 1"), c(Func::Lt, vec![i(1), i(2)]));
        assert_eq!(p("-3"), i(-3));
        assert_eq!(p("- -3"), i(3));
        assert_eq!(
            p("-:x"),
            c(Func::Sub, vec![i(0), Expr::Var(VarName::new("x"))])
        );
        // 0 - 0.0 is +0.0, not -0.0
        assert!(matches!(p("-0.0"), Expr::Const(Value::Double(d)) if d.to_bits() == 0));
        // `- INT64_MIN` overflows at run time, as in pgbench: not folded
        assert_eq!(
            p("- -9223372036854775808"),
            c(Func::Sub, vec![i(0), i(i64::MIN)])
        );
        assert_eq!(p("-9223372036854775808"), i(i64::MIN));
        // ~ binds like the bitwise operators: ~1 + 2 = ~(1+2), ~1 | 2 = (~1) | 2
        assert_eq!(
            p("~1 + 2"),
            c(Func::BitXor, vec![i(-1), c(Func::Add, vec![i(1), i(2)])])
        );
        assert_eq!(
            p("~1 | 2"),
            c(Func::BitOr, vec![c(Func::BitXor, vec![i(-1), i(1)]), i(2)])
        );
        assert_eq!(
            p("hash(1)"),
            c(
                Func::HashMurmur2,
                vec![i(1), Expr::Var("default_seed".into())]
            )
        );
        assert_eq!(
            p(":x ISNULL"),
            c(
                Func::Is,
                vec![Expr::Var("x".into()), Expr::Const(Value::Null)]
            )
        );
    }

    #[test]
    fn errors_with_offsets() {
        let e = parse_expr("1 +").unwrap_err();
        assert_eq!((e.message.as_str(), e.offset), ("syntax error", 2));
        let e = parse_expr("1 < 2 < 3").unwrap_err();
        assert_eq!((e.message.as_str(), e.offset), ("syntax error", 6));
        let e = parse_expr("noSuchFn(3)").unwrap_err();
        assert_eq!(e.to_string(), "unexpected function name (noSuchFn)");
        assert_eq!(e.offset, 7);
        let e = parse_expr("least()").unwrap_err();
        assert_eq!(
            (e.to_string().as_str(), e.offset),
            ("at least one argument expected (least)", 6)
        );
        let e = parse_expr("LN(1, 2)").unwrap_err();
        assert_eq!(e.to_string(), "unexpected number of arguments (ln)");
        let e = parse_expr("1 2 $").unwrap_err();
        assert_eq!(
            (e.to_string().as_str(), e.offset),
            ("unexpected character ($)", 4)
        );
        let deep = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert!(parse_expr(&deep(9996)).is_ok());
        let e = parse_expr(&deep(9997)).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.offset),
            ("memory exhausted", 9997 + 1)
        );
        assert!(parse_expr(&format!("{}1", "-".repeat(9997))).is_ok());
        assert_eq!(
            parse_expr(&format!("{}1", "-".repeat(9998)))
                .unwrap_err()
                .message,
            "memory exhausted"
        );
        let e = parse_expr("9223372036854775808").unwrap_err();
        assert_eq!(e.message, "syntax error");
        assert!(parse_expr("x").is_err());
    }
}
