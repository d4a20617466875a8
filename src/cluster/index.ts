// Public exports of src/cluster (filled in by its issue).
export {}
