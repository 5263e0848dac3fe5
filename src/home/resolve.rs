//! Name resolution (to be written).
