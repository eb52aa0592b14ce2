//! PTX emulator (in progress).
