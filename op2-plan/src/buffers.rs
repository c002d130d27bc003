//! A plan's arrays as a device backend keeps them: one device buffer per array, uploaded once per
//! plan, of whatever buffer type the backend's device has.

use op2_core::Result;
use op2_core::plan::{LocalIndices, Plan};

/// A plan's arrays in device buffers of type `B`.
pub struct PlanBuffers<B> {
    /// [`Plan::block_map`].
    pub block_map: B,
    /// [`Plan::block_offsets`].
    pub block_offsets: B,
    /// [`Plan::block_lengths`].
    pub block_lengths: B,
    /// [`Plan::element_colours`].
    pub element_colours: B,
    /// [`Plan::block_element_colours`].
    pub block_colours: B,
    /// Per staging area: its local-to-global items, offsets, sizes and block-local indices.
    pub staging: Vec<[B; 4]>,
    /// Device bytes of all these buffers (each at least one byte, as uploads allocate).
    pub device_bytes: usize,
}

impl<B> PlanBuffers<B> {
    /// Copies every array of `plan` to the device with `upload` (bytes in, buffer out), the
    /// block-local indices of staging area `k` as 32-bit values when `wide[k]` is set, whatever
    /// width the plan keeps them in (code compiled for the largest blocks a loop may plan reads
    /// 32-bit indices from smaller ones too).
    pub fn upload_widened(
        plan: &Plan,
        wide: &[bool],
        mut upload: impl FnMut(&[u8]) -> Result<B>,
    ) -> Result<Self> {
        let mut device_bytes = 0;
        let mut upload = |bytes: &[u8]| {
            device_bytes += bytes.len().max(1);
            upload(bytes)
        };
        let mut staging = Vec::with_capacity(plan.staging.len());
        for (k, s) in plan.staging.iter().enumerate() {
            let items = upload(bytemuck::cast_slice(&s.local_to_global))?;
            let offsets = upload(bytemuck::cast_slice(&s.offsets))?;
            let sizes = upload(bytemuck::cast_slice(&s.sizes))?;
            let local = match &s.global_to_local {
                LocalIndices::U16(v) if wide.get(k).copied().unwrap_or(false) => {
                    let widened: Vec<u32> = v.iter().map(|&x| u32::from(x)).collect();
                    upload(bytemuck::cast_slice(&widened))?
                }
                LocalIndices::U16(v) => upload(bytemuck::cast_slice(v))?,
                LocalIndices::U32(v) => upload(bytemuck::cast_slice(v))?,
            };
            staging.push([items, offsets, sizes, local]);
        }
        Ok(PlanBuffers {
            block_map: upload(bytemuck::cast_slice(&plan.block_map))?,
            block_offsets: upload(bytemuck::cast_slice(&plan.block_offsets))?,
            block_lengths: upload(bytemuck::cast_slice(&plan.block_lengths))?,
            element_colours: upload(bytemuck::cast_slice(&plan.element_colours))?,
            block_colours: upload(bytemuck::cast_slice(&plan.block_element_colours))?,
            staging,
            device_bytes,
        })
    }
}
