"""The portal's own date and number formats by language (`FORMAT_MODULE_PATH`), where
Django's do not suit a Brazilian fleet."""
