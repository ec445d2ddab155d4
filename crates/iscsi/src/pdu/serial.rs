//! The numbers and tags a PDU carries, each its own type so that a StatSN
//! cannot be passed where a CmdSN goes. Sequence numbers compare by serial
//! number arithmetic (RFC 1982 with 32 bits, as RFC 7143 §4.2.2.1 uses it):
//! they wrap at 2^32, and `a` is before `b` when `b` is ahead of it by less
//! than 2^31.

use std::fmt;

macro_rules! serial {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The number after this one, wrapping at 2^32.
            #[must_use]
            pub fn next(self) -> Self {
                self.plus(1)
            }

            /// The number before this one, wrapping at 0.
            #[must_use]
            pub fn prev(self) -> Self {
                $name(self.0.wrapping_sub(1))
            }

            /// This number `n` places on, wrapping at 2^32.
            #[must_use]
            pub fn plus(self, n: u32) -> Self {
                $name(self.0.wrapping_add(n))
            }

            /// How far `self` is ahead of `earlier`, modulo 2^32.
            pub fn since(self, earlier: Self) -> u32 {
                self.0.wrapping_sub(earlier.0)
            }

            /// `self` comes before `other`: `other` is ahead by less than
            /// 2^31. Two numbers exactly 2^31 apart are each before the
            /// other (RFC 1982 leaves that comparison undefined).
            pub fn before(self, other: Self) -> bool {
                (self.since(other) as i32) < 0
            }

            /// `self` is `other` or comes before it.
            pub fn not_after(self, other: Self) -> bool {
                self == other || self.before(other)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    )*};
}

serial! {
    /// CmdSN, ExpCmdSN and MaxCmdSN: the command window (§4.2.2.1).
    CmdSn;
    /// StatSN and ExpStatSN: responses in order (§4.2.2.2).
    StatSn;
    /// DataSN of a Data-In or Data-Out PDU within its command.
    DataSn;
    /// R2TSN of an R2T within its command.
    R2tSn;
}

macro_rules! tag {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The reserved "no tag" value, 0xffffffff.
            pub const NONE: $name = $name(super::NO_TAG);
        }

        impl fmt::LowerHex for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::LowerHex::fmt(&self.0, f)
            }
        }
    )*};
}

tag! {
    /// Initiator Task Tag: names a command (or a login, a text exchange)
    /// in every PDU about it.
    Itt;
    /// Target Transfer Tag: names an R2T's transfer or a target's ping.
    Ttt;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_comparison_wraps() {
        let top = CmdSn(u32::MAX);
        assert_eq!(top.next(), CmdSn(0));
        assert!(top.before(top.next()));
        assert!(!top.next().before(top));
        assert!(CmdSn(0xffff_fff0).before(CmdSn(5)));
        assert!(!CmdSn(5).before(CmdSn(0xffff_fff0)));
        assert!(CmdSn(5).not_after(CmdSn(5)) && !CmdSn(5).before(CmdSn(5)));
        // Just under half the space ahead is after; just over is before.
        assert!(StatSn(10).before(StatSn(10).plus((1 << 31) - 1)));
        assert!(StatSn(10).plus((1 << 31) + 1).before(StatSn(10)));
        // A window that spans the wrap still counts its commands.
        assert_eq!(CmdSn(3).since(CmdSn(u32::MAX - 1)), 5);
        assert!(DataSn(u32::MAX).next() == DataSn(0) && R2tSn(0).plus(2) == R2tSn(2));
        assert_eq!(format!("{:08x}", Itt(0xab)), "000000ab");
        assert_eq!(Ttt::NONE.0, 0xffff_ffff);
    }
}
