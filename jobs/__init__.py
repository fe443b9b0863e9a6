"""What runs on a compute node: build one submission against PETSc, run its cases
under the site's launcher with instrumentation, write one result record.

Imports nothing heavy (no pandas, h5py or litellm): compute nodes are lean."""
