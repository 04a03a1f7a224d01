//! tessel host side.
