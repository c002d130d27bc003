//! Element types a Dat, Global or Const may hold, and the untyped, aligned host buffer behind them.

use std::fmt;

/// The element type of a Dat, Global or Const.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `double`
    F64,
    /// `float`
    F32,
    /// `int32_t`
    I32,
    /// `uint32_t`
    U32,
    /// `int64_t`
    I64,
    /// `uint64_t`
    U64,
}

impl DType {
    /// All element types, in declaration order.
    pub const ALL: [DType; 6] = [
        DType::F64,
        DType::F32,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
    ];

    /// The C99 type name the generated code uses.
    pub fn c_name(self) -> &'static str {
        match self {
            DType::F64 => "double",
            DType::F32 => "float",
            DType::I32 => "int32_t",
            DType::U32 => "uint32_t",
            DType::I64 => "int64_t",
            DType::U64 => "uint64_t",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32)
    }

    /// The element type a C type name denotes on LP64 targets, if it is one we know
    /// (`double`, `unsigned int`, `int64_t`, `long`, ...). Used to check kernel parameters.
    pub fn from_c_name(name: &str) -> Option<DType> {
        let words: Vec<&str> = name
            .split_whitespace()
            .filter(|w| {
                !matches!(
                    *w,
                    "const" | "volatile" | "restrict" | "__restrict" | "__restrict__" | "signed"
                )
            })
            .collect();
        let unsigned = words.contains(&"unsigned");
        let core: Vec<&str> = words.iter().copied().filter(|w| *w != "unsigned").collect();
        Some(match (unsigned, core.as_slice()) {
            (false, ["double"]) => DType::F64,
            (false, ["float"]) => DType::F32,
            (false, ["int"]) | (false, ["int32_t"]) => DType::I32,
            (true, []) | (true, ["int"]) | (false, ["uint32_t"]) => DType::U32,
            (false, ["long"])
            | (false, ["long", "int"])
            | (false, ["long", "long"])
            | (false, ["long", "long", "int"])
            | (false, ["int64_t"]) => DType::I64,
            (true, ["long"])
            | (true, ["long", "int"])
            | (true, ["long", "long"])
            | (true, ["long", "long", "int"])
            | (false, ["uint64_t"]) => DType::U64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
        })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be stored in a Dat, Global or Const.
pub trait Scalar:
    bytemuck::Pod + PartialOrd + fmt::Debug + Send + Sync + sealed::Sealed + 'static
{
    /// The matching [`DType`].
    const DTYPE: DType;
    /// The largest value (identity of MIN).
    const MAX_VALUE: Self;
    /// The smallest value (identity of MAX).
    const MIN_VALUE: Self;
    /// Zero (identity of INC).
    const ZERO: Self;
}

macro_rules! scalar {
    ($t:ty, $d:ident, $min:expr, $max:expr) => {
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            const MAX_VALUE: Self = $max;
            const MIN_VALUE: Self = $min;
            const ZERO: Self = 0 as $t;
        }
    };
}
scalar!(f64, F64, f64::NEG_INFINITY, f64::INFINITY);
scalar!(f32, F32, f32::NEG_INFINITY, f32::INFINITY);
scalar!(i32, I32, i32::MIN, i32::MAX);
scalar!(u32, U32, u32::MIN, u32::MAX);
scalar!(i64, I64, i64::MIN, i64::MAX);
scalar!(u64, U64, u64::MIN, u64::MAX);

/// Host storage for any [`DType`]: 8-byte aligned words, so every element type can be viewed in place.
#[derive(Debug, Clone)]
pub struct HostBuffer {
    words: Vec<u64>,
    len: usize,
    dtype: DType,
}

impl HostBuffer {
    /// A buffer holding a copy of `values`.
    pub fn from_slice<T: Scalar>(values: &[T]) -> Self {
        let mut buf = Self::zeroed(T::DTYPE, values.len());
        buf.as_mut_slice::<T>().copy_from_slice(values);
        buf
    }

    /// A zero-filled buffer of `len` elements.
    pub fn zeroed(dtype: DType, len: usize) -> Self {
        let words = (len * dtype.size()).div_ceil(8);
        HostBuffer {
            words: vec![0; words],
            len,
            dtype,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The elements, viewed as `T`; `T` must match the buffer's dtype.
    pub fn as_slice<T: Scalar>(&self) -> &[T] {
        assert_eq!(T::DTYPE, self.dtype, "HostBuffer viewed as the wrong type");
        &bytemuck::cast_slice::<u64, T>(&self.words)[..self.len]
    }

    /// The elements, viewed mutably as `T`; `T` must match the buffer's dtype.
    pub fn as_mut_slice<T: Scalar>(&mut self) -> &mut [T] {
        assert_eq!(T::DTYPE, self.dtype, "HostBuffer viewed as the wrong type");
        &mut bytemuck::cast_slice_mut::<u64, T>(&mut self.words)[..self.len]
    }

    /// The raw bytes of the elements.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len * self.dtype.size()]
    }

    /// The raw bytes of the elements, mutably.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        let n = self.len * self.dtype.size();
        &mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.words)[..n]
    }

    /// Pointer to the first element, for generated code that only reads.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        self.words.as_ptr().cast()
    }

    /// Pointer to the first element, for generated code.
    pub fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        self.words.as_mut_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_c_name(d.c_name()), Some(d));
        }
        assert_eq!(
            DType::from_c_name("const unsigned long long"),
            Some(DType::U64)
        );
        assert_eq!(DType::from_c_name("unsigned"), Some(DType::U32));
        assert_eq!(DType::from_c_name("my_real_t"), None);
    }

    #[test]
    fn f32_buffer_of_odd_length() {
        let b = HostBuffer::from_slice(&[1.0f32, 2.0, 3.0]);
        assert_eq!(b.as_slice::<f32>(), &[1.0, 2.0, 3.0]);
        assert_eq!(b.as_bytes().len(), 12);
    }
}
