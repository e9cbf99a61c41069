let s=0; for (let i=0;i<1e5;i++) s+=Math.sqrt(i); setTimeout(()=>console.log(s), 10);
