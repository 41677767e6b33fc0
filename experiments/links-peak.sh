# Sourced by the experiment scripts whose shipped results (docs/claims.md and the guide's
# tables, docs/slice-capacity.md) were made before copies ran at the hardware profile's link
# efficiency (profiles/hardware/*.ini [links]) and before the KV pool's copies out of the GPU
# held the host link: live migrations, KV hand-offs, KV-pool loads and KV swaps then moved bytes
# at the link's full bandwidth, offloads to the KV pool were free, and SliceScheduler's moves
# ran at slice_link_eff 0.8. These rows were made with transfers at full link bandwidth; LINKS
# and SLICE_LINK pin that so they reproduce (a rerun at the profile's efficiencies is pending).
# LINKS="" SLICE_LINK="" run as the simulator now does.
LINKS=${LINKS-"--set cluster.nvlink_efficiency=1 --set cluster.pcie_efficiency=1
 --set cluster.net_efficiency=1 --set kvpool.offload=free"}
SLICE_LINK=${SLICE_LINK-"--set policy.slice_link_eff=0.8"}
