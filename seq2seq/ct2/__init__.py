"""CTranslate2: exporting a run, and translating with the export."""
