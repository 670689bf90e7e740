from . import write_all

write_all()
