//! The calculator's grammar (see the crate's documentation); integers, tuples and layouts are
//! read by layout-core's own parsers.

use crate::ops::apply;
use crate::value::*;
use layout_core::*;

/// Evaluates one expression; the `Err` is the reason, ready to print after `error: `.
pub fn eval(src: &str) -> R<Value> {
    let mut p = Parser {
        b: src.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let v = p.expr()?;
    p.ws();
    if p.pos != p.b.len() {
        return Err(format!("unexpected {} at byte {}", p.what(), p.pos));
    }
    Ok(v)
}

/// Evaluates one line and formats the answer as `tessel eval` prints it.
pub fn eval_line(src: &str) -> String {
    match eval(src) {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    /// The character at the current position, quoted (whole, when it is not ASCII).
    fn what(&self) -> String {
        match std::str::from_utf8(&self.b[self.pos..]) {
            Ok(rest) => match rest.chars().next() {
                Some(c) => format!("{c:?}"),
                None => "end of input".into(),
            },
            Err(_) => format!("byte 0x{:02x}", self.b[self.pos]),
        }
    }
    fn ws(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> R<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {}, found {}",
                c as char,
                self.pos,
                self.what()
            ))
        }
    }
    fn int(&mut self) -> R<i64> {
        self.ws();
        let (t, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
        if !t.is_int() || t.is_hole() {
            return Err(format!("expected an integer at byte {}", self.pos));
        }
        self.pos = end;
        Ok(t.value())
    }

    fn expr(&mut self) -> R<Value> {
        if self.depth >= MAX_NESTING {
            return Err(format!(
                "expression nested deeper than {MAX_NESTING} levels at byte {}",
                self.pos
            ));
        }
        self.depth += 1;
        let v = self.expr_inner();
        self.depth -= 1;
        v
    }

    fn expr_inner(&mut self) -> R<Value> {
        match self.peek() {
            None => Err("empty expression".into()),
            Some(c) if c.is_ascii_alphabetic() => self.call(),
            Some(b'<') => self.tiler(),
            Some(_) => {
                let (t, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
                self.pos = end;
                if self.peek() == Some(b':') {
                    self.pos += 1;
                    self.ws();
                    let (d, end) = IntTuple::parse_at(self.b, self.pos).map_err(err)?;
                    self.pos = end;
                    return Ok(Value::Layout(Layout::new(t, d).map_err(err)?));
                }
                if t.is_int() && !t.is_hole() {
                    Ok(Value::Int(t.value()))
                } else {
                    Ok(Value::Tuple(t))
                }
            }
        }
    }

    /// Items separated by `,` up to `close` (the opening bracket already read); none at all
    /// only when `empty_ok`.
    fn items<T>(
        &mut self,
        close: u8,
        empty_ok: bool,
        mut item: impl FnMut(&mut Self) -> R<T>,
    ) -> R<Vec<T>> {
        let mut v = Vec::new();
        if empty_ok && self.peek() == Some(close) {
            self.pos += 1;
            return Ok(v);
        }
        loop {
            v.push(item(self)?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(v);
                }
                _ => {
                    return Err(format!(
                        "expected ',' or '{}' at byte {}, found {}",
                        close as char,
                        self.pos,
                        self.what()
                    ))
                }
            }
        }
    }

    fn tiler(&mut self) -> R<Value> {
        self.eat(b'<')?;
        let modes = self.items(b'>', false, |p| {
            p.ws();
            let hole = p.b.get(p.pos) == Some(&b'_')
                && !p.b.get(p.pos + 1).is_some_and(|c| c.is_ascii_digit());
            if hole {
                p.pos += 1;
                Ok(None)
            } else {
                Ok(Some(to_layout(&p.expr()?)?))
            }
        })?;
        Ok(Value::Tiler(Tiler::by_mode(&modes).map_err(err)?))
    }

    fn call(&mut self) -> R<Value> {
        let start = self.pos;
        while self.pos < self.b.len()
            && (self.b[self.pos].is_ascii_alphanumeric() || self.b[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let name = std::str::from_utf8(&self.b[start..self.pos])
            .unwrap()
            .to_string();
        // a copy atom with its template argument: SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>
        if self.b.get(self.pos) == Some(&b'<') && !name.starts_with("Sw") {
            let close = self.b[self.pos..].iter().position(|&c| c == b'>');
            if let Some(n) = close {
                let full = std::str::from_utf8(&self.b[start..self.pos + n + 1]).unwrap_or("");
                if let Some(t) = CopyTraits::by_name(full) {
                    self.pos += n + 1;
                    return CopyAtom::new(&t, 16).map(Value::CopyAtom).map_err(err);
                }
            }
        }
        if !matches!(self.peek(), Some(b'(' | b'<')) {
            match name.as_str() {
                "K" => return Ok(Value::Major(GmmaMajor::K)),
                "MN" => return Ok(Value::Major(GmmaMajor::MN)),
                _ => {}
            }
            if let Some(t) = CopyTraits::by_name(&name) {
                return CopyAtom::new(&t, 16).map(Value::CopyAtom).map_err(err);
            }
            return match MmaAtom::by_name(&name) {
                Some(a) => Ok(Value::Atom(a)),
                None => Err(format!(
                    "unknown name {name:?} at byte {start} (not an MMA or copy atom; a call needs '(')"
                )),
            };
        }
        let mut targ = None;
        if self.b.get(self.pos) == Some(&b'<') {
            self.pos += 1;
            if name == "Sw" {
                let (bb, m) = (self.int()?, {
                    self.eat(b',')?;
                    self.int()?
                });
                self.eat(b',')?;
                let s = self.int()?;
                self.eat(b'>')?;
                return self.swizzled(Swizzle::new(bb, m, s).map_err(err)?);
            }
            let at = self.pos;
            let i = self.int()?;
            if i < 0 {
                return Err(format!(
                    "{name}<{i}> at byte {at}: a mode index is 0 or more"
                ));
            }
            targ = Some(i);
            self.eat(b'>')?;
        }
        self.eat(b'(')?;
        let args = self.items(b')', true, Self::expr)?;
        apply(&name, targ, &args)
    }

    /// After `Sw<B,M,S>`: `o [OFFSET o] LAYOUT`.
    fn swizzled(&mut self, sw: Swizzle) -> R<Value> {
        self.ws();
        self.eat(b'o')?;
        let first = self.expr()?;
        let (offset, inner) = match (first, self.peek()) {
            (Value::Int(o), Some(b'o')) => {
                self.pos += 1;
                (o, self.expr()?)
            }
            (v, _) => (0, v),
        };
        let layout = to_layout(&inner)?;
        Ok(Value::Composed(
            ComposedLayout::with_offset(sw, offset, layout).map_err(err)?,
        ))
    }
}
