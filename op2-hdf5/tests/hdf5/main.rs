//! op2-hdf5's tests in one binary: OP2-Common's file layout read and written, round trips of
//! every type, and the files checked by other tools (h5py, h5dump).

mod crashes;
mod layout;
mod other_tools;
mod round_trip;
