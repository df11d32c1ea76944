//! How a study file keeps a setting that is one value for `run` and an
//! axis for `sweep`: one value as the scalar it always was, several as a
//! list, so studies written before the axis existed still load.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[]` as the default value, `[x]` as `x`, several as a list.
pub(crate) fn serialize<T: Serialize + Default, S: Serializer>(
    values: &[T],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match values {
        [] => T::default().serialize(s),
        [one] => one.serialize(s),
        many => many.serialize(s),
    }
}

/// A scalar or a list, as a list (the study's own reading of one).
pub(crate) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<T>, D::Error> {
    crate::results::study::OneOrMany::deserialize(d).map(crate::results::study::OneOrMany::into_vec)
}

/// Each value given, in order, once; the default where none was: the
/// points of an axis.
pub(crate) fn each_once<T: PartialEq + Copy + Default>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for &value in values {
        if !out.contains(&value) {
            out.push(value);
        }
    }
    if out.is_empty() {
        out.push(T::default());
    }
    out
}
