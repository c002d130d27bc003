//! Collectives the partition steps share: every rank's bytes, and a local failure made every
//! rank's.

use crate::error::{MpiError, Result};
use op2_core::comm::Communicator;

pub(crate) fn u64s_to_bytes(v: &[u64]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

pub(crate) fn bytes_to_u64s(b: &[u8]) -> Vec<u64> {
    bytemuck::pod_collect_to_vec(b)
}

/// Every rank's `bytes`, in rank order.
pub(crate) fn all_gather(comm: &dyn Communicator, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
    Ok(comm.all_to_all_v(vec![bytes; comm.size()])?)
}

/// Makes a local failure collective: every rank learns whether any rank failed, and fails too,
/// quoting the first failing rank's error.
pub(crate) fn agree<T>(comm: &dyn Communicator, local: Result<T>) -> Result<T> {
    let message = match &local {
        Ok(_) => Vec::new(),
        Err(e) => {
            let mut m = e.to_string().into_bytes();
            m.insert(0, b'!');
            m
        }
    };
    let all = all_gather(comm, message)?;
    match local {
        Err(e) => Err(e),
        Ok(v) => match all.iter().position(|m| !m.is_empty()) {
            None => Ok(v),
            Some(rank) => Err(MpiError::OtherRank {
                rank,
                reason: String::from_utf8_lossy(&all[rank][1..]).into_owned(),
            }),
        },
    }
}
