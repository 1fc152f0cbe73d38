"""Files shipped inside the package that hosts receive unchanged (`sparkfab.writer.assets`)."""
